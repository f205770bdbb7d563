from deltalake import DeltaTable

from ampdelta import Client

client = Client('grpc://localhost:1602')

if DeltaTable.is_deltatable('./data/blocks'):
    DeltaTable('./data/blocks').delete()

result = client.sql(
    'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
).load(connection='local_delta', destination='blocks', read_all=True)

print(result)
