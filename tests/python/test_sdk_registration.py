"""`ampdelta.sdk.register()`: ampdelta's loader in the Amp Python SDK's registry.

The SDK cannot be installed here (not on PyPI under its name, its repository unreachable),
so its registry contract (amp-protocol.md §3.1; `amp/loaders/registry.py`: a class-level dict,
`register(name, cls)` refusing anything but a `DataLoader` subclass, `create_loader(name,
config, label_manager=...)` building `cls(config, label_manager=...)`, and `DataLoader` an ABC
with abstract connect/disconnect/_load_batch_impl) is stood in for by a minimal package
written from that description, in a subprocess's path.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

STAND_IN = {
    "amp/__init__.py": "",
    "amp/loaders/__init__.py": "",
    "amp/loaders/base.py": """
        import abc

        class DataLoader(abc.ABC):
            def __init__(self, config, label_manager=None):
                self.config = config

            @abc.abstractmethod
            def connect(self): ...

            @abc.abstractmethod
            def disconnect(self): ...

            @abc.abstractmethod
            def _load_batch_impl(self, batch, table_name, **kwargs): ...
        """,
    "amp/loaders/registry.py": """
        from .base import DataLoader

        class LoaderRegistry:
            _loaders = {}

            @classmethod
            def register(cls, name, loader_class):
                if not (isinstance(loader_class, type) and issubclass(loader_class, DataLoader)):
                    raise ValueError(f"{loader_class} is not a DataLoader")
                cls._loaders[name] = loader_class

            @classmethod
            def create_loader(cls, name, config, label_manager=None):
                return cls._loaders[name](config, label_manager=label_manager)
        """,
}


def run(tmp_path, code: str, with_sdk: bool = True) -> subprocess.CompletedProcess:
    path = ""
    if with_sdk:
        for name, text in STAND_IN.items():
            target = tmp_path / "sdk" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(text))
        path = str(tmp_path / "sdk")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


def test_register_puts_a_dataloader_subclass_that_writes_natively_in_the_registry(tmp_path):
    done = run(tmp_path, f"""
        import pyarrow as pa
        import ampdelta.sdk
        from amp.loaders.base import DataLoader
        from amp.loaders.registry import LoaderRegistry

        cls = ampdelta.sdk.register()
        assert LoaderRegistry._loaders["ampdelta"] is cls and issubclass(cls, DataLoader)
        loader = LoaderRegistry.create_loader(
            "ampdelta", {{"table_path": {str(tmp_path / 't')!r}}}, label_manager=None)
        with loader:
            result = loader.load_table(pa.table({{"block_num": [1, 2, 3]}}), "blocks")
            rows = loader._load_batch_impl(pa.record_batch({{"block_num": [4]}}), "blocks")
        assert result.success and result.rows_loaded == 3, result
        assert rows == 1
        print("ok")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    from conftest import read_all
    for reader, table in read_all(tmp_path / "t", ("deltalake", "polars")).items():
        assert sorted(table.column("block_num").to_pylist()) == [1, 2, 3, 4], reader


def test_register_without_the_sdk_says_what_is_missing(tmp_path):
    done = run(tmp_path, """
        import ampdelta.sdk
        try:
            ampdelta.sdk.register()
        except ImportError as error:
            print(error)
    """, with_sdk=False)
    assert done.returncode == 0, done.stderr
    assert "needs the Amp Python SDK" in done.stdout
    assert "use ampdelta.Client" in done.stdout


@pytest.mark.parametrize("name", ["ampdelta", "deltalake"])
def test_register_takes_the_name_connections_use(tmp_path, name):
    done = run(tmp_path, f"""
        import ampdelta.sdk
        from amp.loaders.registry import LoaderRegistry
        ampdelta.sdk.register({name!r})
        print(LoaderRegistry._loaders[{name!r}].__name__)
    """)
    assert done.returncode == 0 and done.stdout.strip() == "AmpDeltaLoader", done.stderr
