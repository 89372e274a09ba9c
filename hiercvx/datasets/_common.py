"""What every loader and generator of :mod:`hiercvx.datasets` shares: the :class:`Dataset`
container and the reading of a (possibly gzipped) UTF-8 text file into lines.

It sits below :mod:`.arff`, :mod:`.formats` and :mod:`.synthetic`, so that they import it
and not each other.
"""

from __future__ import annotations

import gzip
import operator
import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..exceptions import DataFormatError, InputError, InputTypeError
from ..hierarchy import Hierarchy


#: the environment variable naming the folder of the Clus-HMC ARFF files
HMC_DATA_ENV = "HIERCVX_HMC_DATA"


def default_hmc_dir(package_dir=None) -> Path:
    """Where the Clus-HMC ARFF files are looked for when ``$HIERCVX_HMC_DATA`` is not set.

    Parameters
    ----------
    package_dir : path-like, optional
        The folder of the ``hiercvx`` package (default: the one imported).

    Returns
    -------
    pathlib.Path
        In a checkout of the project (the package's parent folder holds ``pyproject.toml``):
        ``shared/data/hmc`` next to the checkout's folder.  In an installed copy
        (``site-packages``): ``~/hiercvx_data/hmc``, a folder of the user's as scikit-learn's
        ``~/scikit_learn_data``, never a path inside the environment.
    """
    package = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parents[1]
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file():
        return checkout.parent / "shared" / "data" / "hmc"
    # os.path.expanduser leaves "~" as it is when no home folder is known (Path.home raises)
    return Path(os.path.expanduser(os.path.join("~", "hiercvx_data", "hmc")))


#: the folder of the Clus-HMC ARFF files when ``$HIERCVX_HMC_DATA`` is not set
#: (:func:`default_hmc_dir`)
DEFAULT_HMC_DIR = default_hmc_dir()


def hmc_data_dir() -> Path:
    """The folder of the Clus-HMC ARFF files: ``$HIERCVX_HMC_DATA`` when set, else
    ``DEFAULT_HMC_DIR``."""
    return Path(os.environ.get(HMC_DATA_ENV) or DEFAULT_HMC_DIR)


def hmc_data_source() -> str:
    """Where :func:`hmc_data_dir` came from, for messages: the variable or the default."""
    return f"from ${HMC_DATA_ENV}" if os.environ.get(HMC_DATA_ENV) else "the default folder"

__all__ = ["Dataset", "ColumnNames", "MAX_GZ_BYTES", "max_gz_bytes", "is_gzip", "check_path",
           "decode_text", "split_lines", "read_text", "read_lines", "first_lines"]


# ---------------------------------------------------------------------- container
class ColumnNames(Sequence):
    """The names ``x0, x1, ...`` of ``n`` columns, made on demand: a LIBSVM file may use
    index 2**31 - 1 with a handful of nonzeros, and a list of 2**31 strings would not fit."""

    def __init__(self, n: int, prefix: str = "x"):
        self.n, self.prefix = int(n), prefix

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [f"{self.prefix}{k}" for k in range(*j.indices(self.n))]
        k = operator.index(j)
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(f"column {j} out of range for {self.n} columns")
        return f"{self.prefix}{k}"

    def __eq__(self, other) -> bool:
        if isinstance(other, ColumnNames):
            return (self.n, self.prefix) == (other.n, other.prefix)
        return (isinstance(other, (list, tuple)) and len(other) == self.n
                and list(self) == list(other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"ColumnNames({self.n}, prefix={self.prefix!r})"


@dataclass
class Dataset:
    """Features, labels and their hierarchy.

    ``X`` is ``(n_samples, n_features)`` (dense float with NaN for missing values, or
    CSR); ``y`` is either a list of frozensets of node names (multi-label, what the file
    loaders return) or a 1-D array of node names (single label, what the single-label
    generators return).  Labels are as given: *not* closed upward (use
    ``dataset.hierarchy.closure(dataset.y)``).  Generators fill ``bayes_rule`` (an object
    with ``predict(X)``) and ``bayes_error`` where the paper defines them.
    """

    X: np.ndarray | sp.spmatrix
    y: list | np.ndarray
    hierarchy: Hierarchy
    feature_names: Sequence = field(default_factory=list)
    name: str = ""
    path: Path | None = None
    bayes_rule: object | None = None
    bayes_error: float | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def is_multilabel(self) -> bool:
        return not isinstance(self.y, np.ndarray)

    def label_sets(self) -> list[frozenset]:
        """``y`` as a list of frozensets (single labels become singletons)."""
        if self.is_multilabel:
            return list(self.y)
        return [frozenset((v,)) for v in self.y]

    def closure(self, sparse: bool = True):
        """The labels closed upward, ``(n_samples, n_nodes)`` bool (CSR by default)."""
        return self.hierarchy.closure(self.label_sets(), sparse=sparse)

    def __repr__(self) -> str:
        kind = "multi-label" if self.is_multilabel else "single-label"
        return (f"Dataset({self.name!r}, {self.n_samples} samples, {self.n_features} features, "
                f"{kind}, {self.hierarchy!r})")


#: Default largest decompressed size of a gzip input, in bytes; the environment
#: variable ``HIERCVX_MAX_GZ_BYTES`` overrides it.
MAX_GZ_BYTES = 2 * 1024 ** 3
_CHUNK = 1 << 22


def max_gz_bytes() -> int:
    """The decompression cap: ``HIERCVX_MAX_GZ_BYTES`` when set, else :data:`MAX_GZ_BYTES`."""
    env = os.environ.get("HIERCVX_MAX_GZ_BYTES")
    if env is None:
        return int(MAX_GZ_BYTES)
    try:
        cap = int(env)
    except ValueError:
        cap = -1
    if cap < 0:
        raise InputError(f"the environment variable HIERCVX_MAX_GZ_BYTES must be a whole number "
                         f"of bytes >= 0, got {env!r}; set it to the largest decompressed size "
                         f"to accept, or unset it for the default {MAX_GZ_BYTES}")
    return cap


#: the first two bytes of every gzip stream (RFC 1952)
GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    """Is the file gzip-compressed: named ``*.gz`` in any case, or starting with the gzip
    magic bytes whatever its name (a renamed ``data.arff``)?  A UTF-8 text never starts
    with them: 0x8b is a continuation byte.  A ``*.gz`` file that is not gzip is then
    refused by the decompressor, not read as text."""
    if path.suffix.lower() == ".gz":
        return True
    with open(path, "rb") as fh:
        return fh.read(len(GZIP_MAGIC)) == GZIP_MAGIC


def _read_bytes(path: Path) -> bytes:
    """The file's bytes; a gzip file (:func:`is_gzip`) is decompressed chunk by chunk, and one
    that would exceed :func:`max_gz_bytes` is refused before it fills the memory."""
    if not is_gzip(path):
        return path.read_bytes()
    cap = max_gz_bytes()
    chunks, total = [], 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(min(_CHUNK, cap + 1 - total)):
            total += len(chunk)
            if total > cap:
                raise DataFormatError(
                    f"decompresses to more than {cap} bytes, the cap on gzip inputs; raise it "
                    "with the environment variable HIERCVX_MAX_GZ_BYTES=<bytes>, or decompress "
                    "the file first", path=path)
            chunks.append(chunk)
    return b"".join(chunks)


def decode_text(data: bytes, path: Path) -> str:
    r"""UTF-8 text with a leading byte-order mark dropped and the line ends ``\r\n`` and
    ``\r`` made ``\n`` (universal newlines); non-UTF-8 bytes raise
    :class:`~hiercvx.exceptions.DataFormatError` with the line of the first bad byte."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[:exc.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line = before.count(b"\n") + 1
        raise DataFormatError(f"is not UTF-8 text ({exc.reason} at byte {exc.start}); convert the "
                              "file to UTF-8", path=path, line=line) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    r"""Lines split at ``\n`` only: form feeds, NEL (``\x85``) and the Unicode line and
    paragraph separators inside a line are data, not line breaks (``str.splitlines``
    would break there and shift every later line number)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def check_path(path) -> Path:
    """``path`` as a :class:`~pathlib.Path`; anything but a ``str`` or an ``os.PathLike``
    naming text (``bytes``, a number, an open file) raises
    :class:`~hiercvx.exceptions.InputTypeError`."""
    if isinstance(path, (str, os.PathLike)):
        try:
            return Path(path)
        except TypeError:  # an os.PathLike whose __fspath__ gives bytes
            pass
    raise InputTypeError(f"path must be a file path (str or pathlib.Path), got "
                         f"{type(path).__name__}")


def read_text(path) -> tuple[Path, str]:
    """``(path, text)`` of a UTF-8 text file (a gzip one, :func:`is_gzip`, gunzipped under the
    cap, a byte-order mark dropped, universal newlines); a missing, unreadable or non-UTF-8
    file raises :class:`~hiercvx.exceptions.DataFormatError`."""
    path = check_path(path)
    if not path.exists():
        raise DataFormatError("no such file; check the path", path=path)
    if path.is_dir():
        raise DataFormatError("is a directory, not a data file; name a file in it", path=path)
    try:
        data = _read_bytes(path)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataFormatError(f"cannot be read: {exc}", path=path) from None
    return path, decode_text(data, path)


def read_lines(path) -> tuple[Path, list[str]]:
    """``(path, lines)`` of a UTF-8 text file, as :func:`read_text` reads it, split by
    :func:`split_lines` (line ``k`` of the list is line ``k + 1`` of the file)."""
    path, text = read_text(path)
    return path, split_lines(text)


def first_lines(path: Path, max_bytes: int = 1 << 16) -> list[str]:
    """The first lines of a file (at most ``max_bytes`` of it, decompressed), for sniffing
    the format only (undecodable bytes replaced; the loader reports them); an unreadable
    file gives ``[]``."""
    try:
        with (gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")) as fh:
            data = fh.read(max_bytes)
    except (OSError, EOFError, zlib.error):
        return []
    text = data.decode("utf-8-sig", errors="replace")
    return split_lines(text.replace("\r\n", "\n").replace("\r", "\n"))
