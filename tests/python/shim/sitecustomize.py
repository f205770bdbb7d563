"""Test shim: the seed's scripts, unmodified, against the test's dev server.

The Python SDK's Delta Lake page (/work/shared/seed/delta-lake-loader.md) hard-codes
`Client('grpc://localhost:1602')` in its scripts, and the tests must run those scripts with
nothing changed but their import line (`from amp import Client` -> `from ampdelta import
Client`). The tests' dev servers listen on ephemeral ports instead (port 1602 may be taken,
and test runs must not collide), so something outside the script has to point that URL
at the right server: Python imports `sitecustomize` at start-up from sys.path, and the tests
put this directory on PYTHONPATH of the script's subprocess only.

With $AMPDELTA_TEST_SERVER set, ampdelta.Client is replaced by a subclass that turns exactly
'grpc://localhost:1602' (positional `url`, or the `url=`/`query_url=` keywords) into
$AMPDELTA_TEST_SERVER; every other argument and URL passes through unchanged. Nothing else
is touched.
"""

import os

SEED_URL = "grpc://localhost:1602"
_target = os.environ.get("AMPDELTA_TEST_SERVER")

if _target:
    import ampdelta

    _Client = ampdelta.Client

    def _redirect(url):
        return _target if url == SEED_URL else url

    class Client(_Client):  # noqa: D101 - the package's Client, URL redirected
        def __init__(self, *args, **kwargs):
            if args:
                args = (_redirect(args[0]),) + tuple(args[1:])
            for key in ("url", "query_url"):
                if key in kwargs:
                    kwargs[key] = _redirect(kwargs[key])
            super().__init__(*args, **kwargs)

    Client.__name__ = _Client.__name__
    Client.__qualname__ = _Client.__qualname__
    Client.__module__ = _Client.__module__
    Client.__doc__ = _Client.__doc__
    ampdelta.Client = Client
