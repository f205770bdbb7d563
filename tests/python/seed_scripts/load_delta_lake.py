from ampdelta import Client

client = Client('grpc://localhost:1602')

client.configure_connection('local_delta', 'deltalake', {'table_path': './data/blocks'})

result = client.sql(
    'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
).load(connection='local_delta', destination='blocks', read_all=True)

print(result)
