import polars as pl

df = pl.read_delta('./data/blocks')
print(df.select('block_num', 'timestamp', 'gas_used').sort('block_num', descending=True).head(3))
