"""What `scripts/release` makes from one toolweave binary: its checksum, the npm packages and the
Python wheel, and the facts about the binary they depend on (its architecture, the libraries it
needs, the glibc release it needs at least). Standard library only, so any Python 3.9 runs it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

# The oldest glibc Rust's standard library supports; a binary whose symbols ask for less still
# needs this much.
RUST_GLIBC_FLOOR = (2, 17)

# Libraries the manylinux policies let a wheel's binary take from the system.
MANYLINUX_LIBRARIES = {
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libpthread.so.0",
    "libutil.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}

# ELF `e_machine` values by the wheel's name for the architecture.
ELF_MACHINES = {"x86_64": 62, "aarch64": 183}

NPM_SCOPE = "@toolweave"
REPOSITORY = "https://github.com/toolweave/toolweave"


@dataclass(frozen=True)
class Platform:
    """One platform toolweave is released for, and the names each registry gives it."""

    target: str
    """The Rust target triple the binary is built for."""
    npm_os: str
    """npm's `os` (Node's `process.platform`)."""
    npm_cpu: str
    """npm's `cpu` (Node's `process.arch`)."""
    arch: str
    """The architecture as Rust, ELF and Linux wheel tags name it (`x86_64`, `aarch64`)."""
    runner: str
    """The machine that builds it."""
    released: bool
    """Whether releases include it yet: only these are in the npm launcher's list."""
    macos_floor: str | None = None
    """The oldest macOS the binary runs on (Rust's floor for the target); None on Linux."""

    @property
    def npm_key(self) -> str:
        """The platform package's name after the scope: `linux-x64`."""
        return f"{self.npm_os}-{self.npm_cpu}"

    @property
    def npm_package(self) -> str:
        """The platform package's full name: `@toolweave/linux-x64`."""
        return f"{NPM_SCOPE}/{self.npm_key}"

    @property
    def is_linux(self) -> bool:
        """Whether the binary is an ELF file linked against glibc."""
        return self.npm_os == "linux"


@dataclass(frozen=True)
class ElfFacts:
    """What the dynamic section of a Linux binary says it needs."""

    machine: int
    needed: list[str]
    glibc: tuple[int, int]
    """The newest glibc symbol version it asks for, raised to Rust's floor."""


def read_elf(path: Path) -> ElfFacts:
    """Reads the architecture, the needed libraries and the glibc floor of a 64-bit ELF file."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"{path} is not a 64-bit little-endian ELF file: is it a Linux binary?")
    machine = struct.unpack_from("<H", data, 18)[0]
    (section_offset,) = struct.unpack_from("<Q", data, 40)
    entry_size, count = struct.unpack_from("<HH", data, 58)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", data, section_offset + i * entry_size)
        for i in range(count)
    ]

    def string(table: int, offset: int) -> str:
        start = sections[table][4] + offset
        return data[start : data.index(b"\0", start)].decode()

    needed: list[str] = []
    versions: set[str] = set()
    for _name, kind, _flags, _address, offset, size, link, _info, _align, _entsize in sections:
        if kind == 6:  # SHT_DYNAMIC: (tag, value) pairs; tag 1 is DT_NEEDED.
            for at in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", data, at)
                if tag == 1:
                    needed.append(string(link, value))
        elif kind == 0x6FFFFFFE:  # SHT_GNU_verneed: the symbol versions it needs, per library.
            at = offset
            while True:
                _version, aux_count, _file, aux, following = struct.unpack_from("<HHIII", data, at)
                aux_at = at + aux
                for _ in range(aux_count):
                    _hash, _flags, _other, name, aux_next = struct.unpack_from(
                        "<IHHII", data, aux_at
                    )
                    versions.add(string(link, name))
                    aux_at += aux_next
                if following == 0:
                    break
                at += following
    glibc = [
        tuple(int(part) for part in name[len("GLIBC_") :].split(".")[:2])
        for name in versions
        if name.startswith("GLIBC_2.")
    ]
    if not glibc:
        raise SystemExit(f"{path} names no glibc symbol versions: it is not a glibc binary")
    return ElfFacts(machine, needed, max([*glibc, RUST_GLIBC_FLOOR]))


def check_linux_binary(path: Path, platform: Platform) -> ElfFacts:
    """Refuses a binary for another architecture, or one a manylinux wheel may not carry."""
    facts = read_elf(path)
    if facts.machine != ELF_MACHINES[platform.arch]:
        raise SystemExit(
            f"{path} is built for ELF machine {facts.machine}, not {platform.arch} "
            f"({platform.target}): give the binary built for that target"
        )
    extra = sorted(set(facts.needed) - MANYLINUX_LIBRARIES)
    if extra:
        raise SystemExit(
            f"{path} needs {', '.join(extra)}, which no manylinux system is sure to have: "
            "link it statically or drop the dependency"
        )
    return facts


def sha256_file(path: Path) -> str:
    """The file's SHA-256 in hex."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_checksum(path: Path) -> Path:
    """Writes `<file>.sha256` beside the file, in the form `sha256sum -c` checks."""
    checksum = path.with_name(path.name + ".sha256")
    checksum.write_text(f"{sha256_file(path)}  {path.name}\n")
    return checksum


def npm_pack(directory: Path, out: Path) -> Path:
    """Packs one staged npm package into `out` and returns the tarball."""
    result = subprocess.run(
        ["npm", "pack", "--json", "--pack-destination", str(out.resolve())],
        cwd=directory,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return out / json.loads(result.stdout)[0]["filename"]


def npm_packages(
    binary: Path,
    platform: Platform,
    platforms: list[Platform],
    version: str,
    out: Path,
    readme: Path,
) -> list[Path]:
    """Packs the launcher package `toolweave` and the platform package holding `binary`."""
    launcher_source = Path(__file__).resolve().parent.parent / "packages/npm/toolweave"
    with tempfile.TemporaryDirectory() as staging:
        launcher = Path(staging) / "toolweave"
        shutil.copytree(launcher_source, launcher)
        manifest = json.loads((launcher / "package.json").read_text())
        manifest = {"name": manifest.pop("name"), "version": version, **manifest}
        manifest["optionalDependencies"] = {
            each.npm_package: version for each in platforms if each.released
        }
        manifest["files"].append("README.md")
        (launcher / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        shutil.copy(readme, launcher / "README.md")

        native = Path(staging) / platform.npm_key
        (native / "bin").mkdir(parents=True)
        shutil.copy(binary, native / "bin/toolweave")
        os.chmod(native / "bin/toolweave", 0o755)
        shutil.copy(readme, native / "README.md")
        native_manifest = {
            "name": platform.npm_package,
            "version": version,
            "description": f"The toolweave binary for {platform.npm_key} ({platform.target}); "
            "installed by the `toolweave` package.",
            "license": manifest["license"],
            "repository": manifest["repository"],
            "homepage": manifest["homepage"],
            "os": [platform.npm_os],
            "cpu": [platform.npm_cpu],
            **({"libc": ["glibc"]} if platform.is_linux else {}),
            "files": ["bin/toolweave", "README.md"],
            "preferUnplugged": True,
        }
        (native / "package.json").write_text(json.dumps(native_manifest, indent=2) + "\n")
        return [npm_pack(launcher, out), npm_pack(native, out)]


def wheel_tags(platform: Platform, glibc: tuple[int, int] | None) -> list[str]:
    """The wheel's platform tags: manylinux from the binary's glibc floor, or the macOS floor."""
    if glibc is None:
        major, minor = (platform.macos_floor or "").split(".")
        arch = "arm64" if platform.arch == "aarch64" else platform.arch  # Apple's name for it.
        return [f"macosx_{major}_{minor}_{arch}"]
    major, minor = glibc
    tags = [f"manylinux_{major}_{minor}_{platform.arch}"]
    if (major, minor) == (2, 17):
        tags.append(f"manylinux2014_{platform.arch}")  # The same floor under its older name.
    return tags


def pep440(version: str) -> str:
    """The Cargo (SemVer) version as Python spells it: `1.2.0-rc.1` is `1.2.0rc1`."""
    release, _, pre = version.partition("-")
    if not pre:
        return release
    kind, _, number = pre.partition(".")
    spelled = {"alpha": "a", "beta": "b", "rc": "rc"}.get(kind)
    if spelled is None or not number.isdigit():
        raise SystemExit(f"version {version}: Python has no spelling for the pre-release {pre!r}")
    return f"{release}{spelled}{number}"


def zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    """An entry with a fixed time (SOURCE_DATE_EPOCH, else 1980), so the wheel is reproducible."""
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    entry = zipfile.ZipInfo(name, time.gmtime(max(epoch, 315532800))[:6])
    entry.external_attr = (stat.S_IFREG | mode) << 16
    entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def wheel(binary: Path, tags: list[str], version: str, out: Path, readme: Path) -> Path:
    """Writes a wheel whose one file is the binary, installed as the `toolweave` script."""
    version = pep440(version)
    dist_info = f"toolweave-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: toolweave\n"
        f"Version: {version}\n"
        "Summary: One MCP server that stands in for all of them: models call every upstream tool "
        "from sandboxed TypeScript or Python.\n"
        "License: MIT OR Apache-2.0\n"
        f"Project-URL: Source, {REPOSITORY}\n"
        "Keywords: mcp,model-context-protocol,mcp-server,gateway,sandbox\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + readme.read_text()
    )
    wheel_file = (
        "Wheel-Version: 1.0\nGenerator: toolweave scripts/release\nRoot-Is-Purelib: false\n"
        + "".join(f"Tag: py3-none-{tag}\n" for tag in tags)
    )
    path = out / f"toolweave-{version}-py3-none-{'.'.join(tags)}.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        script = f"toolweave-{version}.data/scripts/toolweave"
        digest = hashlib.sha256()
        with archive.open(zip_entry(script, 0o755), "w") as entry, binary.open("rb") as source:
            for block in iter(lambda: source.read(1 << 20), b""):
                digest.update(block)
                entry.write(block)
        record.append((script, digest.digest(), binary.stat().st_size))
        for name, text in (("METADATA", metadata), ("WHEEL", wheel_file)):
            content = text.encode()
            archive.writestr(zip_entry(f"{dist_info}/{name}", 0o644), content)
            record.append((f"{dist_info}/{name}", hashlib.sha256(content).digest(), len(content)))
        lines = [
            f"{name},sha256={base64.urlsafe_b64encode(hashed).rstrip(b'=').decode()},{size}"
            for name, hashed, size in record
        ]
        lines.append(f"{dist_info}/RECORD,,")
        archive.writestr(zip_entry(f"{dist_info}/RECORD", 0o644), "\n".join(lines) + "\n")
    return path
