from ampdelta import Client

client = Client('grpc://localhost:1602')

client.configure_connection('live_delta', 'deltalake', {'table_path': './data/blocks_live', 'optimize_after_write': False})

results = client.sql(
    'SELECT block_num, timestamp, hash, gas_used FROM "acme/eth_mainnet".blocks'
).load(connection='live_delta', destination='blocks_live', stream=True, with_reorg_detection=False)
for result in results:
    print(result)
