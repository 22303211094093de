"""Where base-key indexes live and how a reader finds them (spec/index.md §12).

The index of base file ``<partition>/<name>`` is ``.hoodie/morlog/base_keys/<partition>/
<name>.keys``: under ``.hoodie`` so that Hudi's and hudi-rs's listings of the partition never
see it. morlog's writer writes it after the base file (``morlog.base.key.index``, on by
default); base files written by Hudi have none and are tagged through their footers.

An index counts only for the base file it names, of the size it records: a file rewritten under
the same name (a retried task) or a damaged index is never trusted, and tagging then reads the
base file's footer (a warning names the file for damage).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

from morlog.logformat.base_keys import BaseKeys, decode_base_keys
from morlog.logformat.errors import BaseKeysWarning, MorlogError
from morlog.logformat.partition_path import check_relative_partition_path

from .storage import Storage, TableLocation

#: under the table's ``.hoodie``
BASE_KEYS_DIR = ("morlog", "base_keys")
SUFFIX = ".keys"


#: decoded indexes kept across taggers of this process (the files never change: a commit
#: tags against the same base files as the one before), least recently used dropped first
CACHE_BYTES = 256 * 1024 * 1024


class _Cache:
    def __init__(self) -> None:
        self.items: OrderedDict[tuple[str, int, int], BaseKeys] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    @staticmethod
    def cost(keys: BaseKeys) -> int:
        return int(keys.fingerprints.nbytes) + int(keys.keys.nbytes)

    def get(self, key: tuple[str, int, int]) -> BaseKeys | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: tuple[str, int, int], keys: BaseKeys) -> None:
        cost = self.cost(keys)
        if cost > CACHE_BYTES:
            return
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.bytes -= self.cost(old)
            self.items[key] = keys
            self.bytes += cost
            while self.bytes > CACHE_BYTES and self.items:
                _, dropped = self.items.popitem(last=False)
                self.bytes -= self.cost(dropped)


_CACHE = _Cache()


def base_keys_dir(location: TableLocation, partition: str) -> str:
    """The directory holding the base-key indexes of ``partition``'s base files."""
    parts = check_relative_partition_path(partition).split("/") if partition else []
    return location.join(".hoodie", *BASE_KEYS_DIR, *parts)


def base_keys_path(location: TableLocation, partition: str, base_file: str) -> str:
    return location.storage.join(base_keys_dir(location, partition), base_file + SUFFIX)


class BaseKeysFinder:
    """The base-key indexes of a table's partitions, listed once per partition (one listing
    of the index directory and one of the partition's directory, for the sizes)."""

    def __init__(self, location: TableLocation, storage: Storage) -> None:
        self.location = location
        self.storage = storage
        self._indexes: dict[str, dict[str, tuple[int, int]]] = {}
        self._bases: dict[str, dict[str, tuple[int, int]]] = {}

    def _listing(self, cache: dict[str, dict[str, tuple[int, int]]], partition: str,
                 directory: str) -> dict[str, tuple[int, int]]:
        found = cache.get(partition)
        if found is None:
            try:
                found = self.storage.versions(directory)
            except (OSError, MorlogError):
                found = {}
            cache[partition] = found
        return found

    def load(self, partition: str, base_file: str, base_dir: str) -> BaseKeys | None:
        """The index of ``base_file`` (in ``base_dir``), or None: there is none, or it does not
        match the file (then a warning)."""
        d = base_keys_dir(self.location, partition)
        if base_file + SUFFIX not in self._listing(self._indexes, partition, d):
            return None
        path = self.storage.join(d, base_file + SUFFIX)
        # the index file's size and modification time with its path: a file rewritten
        # under the same name (a retried task, damage) is read again
        ident = (f"{self.location.uri}|{path}", *self._indexes[partition][base_file + SUFFIX])
        keys = _CACHE.get(ident)
        if keys is None:
            try:
                keys = decode_base_keys(self.storage.read(path), path=path)
            except (OSError, MorlogError) as exc:
                warnings.warn(f"base-key index {path} not used: {exc}", BaseKeysWarning,
                              stacklevel=3)
                return None
            _CACHE.put(ident, keys)
        base = self._listing(self._bases, partition, base_dir).get(base_file)
        size = None if base is None else base[0]
        if keys.base_file != base_file or size is None or keys.base_size != size:
            warnings.warn(f"base-key index {path} not used: it describes "
                          f"{keys.base_file!r} of {keys.base_size} bytes, the file has "
                          f"{size} bytes", BaseKeysWarning, stacklevel=3)
            return None
        return keys


__all__ = ["BASE_KEYS_DIR", "SUFFIX", "BaseKeysFinder", "BaseKeysWarning", "base_keys_dir",
           "base_keys_path"]
