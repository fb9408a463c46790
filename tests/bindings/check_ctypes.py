#!/usr/bin/env python3
"""Checks the Python binding's ctypes declarations against include/agent.h.

bindings/python/src/libagent/_native.py declares, by hand, the restype and argtypes of every C
function it calls and the CFUNCTYPE of every callback; _errors.py the status codes and
_native.HOOK_KINDS the hook kinds. This script parses the header's prototypes, callback typedefs
and #defines and fails on any difference (a missing function, a parameter of another width or
kind, a wrong return type, a renumbered constant). Run it after every header change:

    python3 tests/bindings/check_ctypes.py [include/agent.h] [bindings/python/src/libagent]

It reads the binding's sources with `ast` (no import: neither the library nor pydantic is needed).
"""

from __future__ import annotations

import ast
import ctypes
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# C scalar types and the ctypes type each must be declared as.
SCALARS = {
    "AgentStatus": ctypes.c_int32, "AgentHookKind": ctypes.c_int32, "AgentEventShape": ctypes.c_int32,
    "AgentBlockKind": ctypes.c_int32, "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t, "bool": ctypes.c_bool,
}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def parse_header(text: str):
    """(functions, callbacks, defines): name -> (return type, [parameter types]) for the first two
    (types as normalised C text, e.g. "const char *"), name -> int for the #defines."""
    defines = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(AGENT_\w+)\s+(-?\d+)\s*$", text, re.M)}
    code = strip_comments(text)
    code = re.sub(r"^\s*#.*?(?<!\\)$", " ", code, flags=re.M | re.S)

    def param_type(param: str) -> str:
        param = " ".join(param.replace("*", " * ").split())
        if param == "void":
            return "void"
        words = param.split(" ")
        if words[-1] not in ("*", "const") and len(words) > 1:
            words = words[:-1]  # the parameter's name
        return " ".join(words).replace(" *", "*").replace("* ", "*").replace("*", " *").strip()

    def params(text: str):
        text = text.strip()
        return [] if text in ("", "void") else [param_type(p) for p in text.split(",")]

    callbacks = {}
    for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", code):
        callbacks[m.group(2)] = (param_type(m.group(1) + " x"), params(m.group(3)))
    code = re.sub(r"typedef[^;]*;", " ", code)
    functions = {}
    for m in re.finditer(r"([\w\s\*]+?)\b(agent_\w+)\s*\(([^)]*)\)\s*;", code):
        functions[m.group(2)] = (param_type(m.group(1).strip() + " x"), params(m.group(3)))
    return functions, callbacks, defines


def binding_namespace(native_py: Path):
    """Evaluates the CFUNCTYPE assignments and the signature tables of _native.py."""
    tree = ast.parse(native_py.read_text())
    ns = {name: getattr(ctypes, name) for name in dir(ctypes) if not name.startswith("_")}
    tables = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        value = node.value
        is_cfunctype = isinstance(value, ast.Call) and getattr(value.func, "id", None) == "CFUNCTYPE"
        if is_cfunctype or name in ("_SIGNATURES", "_OPTIONAL_SIGNATURES", "HOOK_KINDS"):
            ns[name] = eval(compile(ast.Expression(value), str(native_py), "eval"), ns)  # noqa: S307 - our own source
            if not is_cfunctype:
                tables[name] = ns[name]
    return ns, tables


def error_codes(errors_py: Path):
    tree = ast.parse(errors_py.read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and re.fullmatch(r"OK|ERR_\w+", node.targets[0].id)}


def main() -> int:
    header = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "include" / "agent.h"
    package = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "bindings" / "python" / "src" / "libagent"
    functions, callbacks, defines = parse_header(header.read_text())
    ns, tables = binding_namespace(package / "_native.py")
    problems = []

    # The ctypes declaration of each callback typedef, e.g. AgentDoneFn -> DoneFn.
    callback_types = {}
    for c_name in callbacks:
        py_name = c_name[len("Agent"):]
        py_name = py_name if py_name.endswith("Fn") else py_name + "Fn"
        if py_name in ns:
            callback_types[c_name] = ns[py_name]

    def pointer_ok(c_type: str, declared) -> bool:
        """A pointer parameter: opaque handles and buffers are c_void_p (or c_char_p for strings);
        pointers to scalars point to the right scalar."""
        target = c_type[: -len(" *")].strip()
        target_bare = target.replace("const ", "").strip()
        if declared in (ctypes.c_void_p,) and not target_bare.endswith("*") and target_bare not in SCALARS:
            return True
        if declared is ctypes.c_char_p:
            return target_bare == "char"
        pointee = getattr(declared, "_type_", None)
        if not isinstance(pointee, type) or declared.__name__.startswith("c_"):
            return False
        if target_bare in SCALARS:
            return pointee is SCALARS[target_bare]
        if target_bare.endswith("*"):  # char ** and Handle ** (out-parameters), Tool *const * (arrays)
            inner = target_bare[: -len(" *")].replace("const", "").strip()
            return pointee in (ctypes.c_void_p, ctypes.c_char_p) if inner == "char" else pointee is ctypes.c_void_p
        return pointee is ctypes.c_void_p  # an array of handles passed as void *

    def type_ok(c_type: str, declared, is_return: bool = False) -> bool:
        if c_type == "void":
            return declared is None
        if c_type in SCALARS:
            return declared is SCALARS[c_type]
        if c_type in callbacks:
            expected = callback_types.get(c_type)
            return expected is not None and declared is expected
        if c_type.endswith("*"):
            if is_return:
                return declared in (ctypes.c_char_p, ctypes.c_void_p) if "char" in c_type else declared is ctypes.c_void_p
            return pointer_ok(c_type, declared)
        return False

    def check(what: str, c_sig, restype, argtypes) -> None:
        c_ret, c_params = c_sig
        if not type_ok(c_ret, restype, is_return=True):
            problems.append(f"{what}: returns {c_ret}, declared {getattr(restype, '__name__', restype)}")
        if len(c_params) != len(argtypes):
            problems.append(f"{what}: {len(c_params)} parameters in the header ({', '.join(c_params)}), "
                            f"{len(argtypes)} declared")
            return
        for i, (c_type, declared) in enumerate(zip(c_params, argtypes)):
            if not type_ok(c_type, declared):
                problems.append(f"{what}: parameter {i + 1} is {c_type}, declared {getattr(declared, '__name__', declared)}")

    for c_name, cb in callback_types.items():
        check(f"callback {c_name}", callbacks[c_name], cb._restype_, list(cb._argtypes_))
    for table in ("_SIGNATURES", "_OPTIONAL_SIGNATURES"):
        for name, (restype, argtypes) in tables.get(table, {}).items():
            if name not in functions:
                problems.append(f"{name}: declared in _native.{table}, not in {header.name}")
                continue
            check(name, functions[name], restype, argtypes)

    for name, value in error_codes(package / "_errors.py").items():
        c_name = "AGENT_" + name
        if defines.get(c_name) != value:
            problems.append(f"_errors.{name} = {value}, {header.name} has {c_name} = {defines.get(c_name)}")
    for c_name, value in defines.items():
        if c_name.startswith("AGENT_ERR_") and c_name[len("AGENT_"):] not in error_codes(package / "_errors.py"):
            problems.append(f"{c_name} ({value}) has no status constant in _errors.py")
    for kind, value in tables.get("HOOK_KINDS", {}).items():
        c_name = "AGENT_HOOK_" + kind.upper()
        if defines.get(c_name) != value:
            problems.append(f"HOOK_KINDS[{kind!r}] = {value}, {header.name} has {c_name} = {defines.get(c_name)}")
    for c_name in defines:
        if c_name.startswith("AGENT_HOOK_") and c_name[len("AGENT_HOOK_"):].lower() not in tables.get("HOOK_KINDS", {}):
            problems.append(f"{c_name} has no entry in _native.HOOK_KINDS")
    tree = ast.parse((package / "_native.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.startswith("EVENT_SHAPE_"):
            c_name = "AGENT_" + node.targets[0].id
            if defines.get(c_name) != ast.literal_eval(node.value):
                problems.append(f"_native.{node.targets[0].id} differs from {c_name}")

    declared = set(tables.get("_SIGNATURES", {})) | set(tables.get("_OPTIONAL_SIGNATURES", {}))
    unused = sorted(set(functions) - declared)
    if problems:
        print(f"ctypes check: {len(problems)} difference(s) between {header} and the Python binding:")
        for problem in problems:
            print("  " + problem)
        return 1
    print(f"ctypes check: {len(declared)} functions and {len(callback_types)} callback types match {header.name}"
          f" ({len(unused)} header functions the binding does not call: {', '.join(unused)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
