"""Helper of test_errors.py: a batch load (read_all=True) that the test interrupts with SIGINT.

    python interrupt_batch_load.py URL TABLE_PATH SQL HOW

HOW = 'progress': print "loading" from the first progress callback (the load is running);
HOW = 'native': print "loading" just before load() and pass no callback, so the signal
lands while only native code runs. The load's result is printed if it ever ends.
"""

import sys

from ampdelta import Client

url, table, sql, how = sys.argv[1:5]
client = Client(url)
client.configure_connection('c', 'deltalake', {'table_path': table,
                                               'optimize_after_write': False})
announced = []


def progress(result):
    if not announced:
        announced.append(True)
        print('loading', flush=True)


options = {'progress': progress} if how == 'progress' else {}
if how != 'progress':
    print('loading', flush=True)
result = client.sql(sql).load(connection='c', destination='t', read_all=True,
                              batch_size=1000, **options)
print(result, flush=True)
