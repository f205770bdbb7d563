from ampdelta import Client

client = Client('grpc://localhost:1602')

client.configure_connection('local_delta_tx', 'deltalake', {'table_path': './data/transactions'})

result = client.sql(
    'SELECT * FROM "acme/eth_mainnet".transactions'
).load(connection='local_delta_tx', destination='transactions', read_all=True,
       mode='overwrite', batch_size=1000)

print(result)
