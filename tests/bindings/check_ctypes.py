#!/usr/bin/env python3
"""Checks the Python binding's ctypes declarations against include/libagent/agent.h (C ABI 1.x).

bindings/python/src/libagent/_native.py declares, by hand, the restype and argtypes of every C
function it calls, the CFUNCTYPE of every callback and the ctypes Structure of every struct
(handles `{uint64_t id}`, AgentStr, AgentRunOutcome, AgentEvent); _errors.py the error codes;
_native.py the other constants (hook kinds, event and update types, run statuses, listener
answers, queue and wait results, version). This script parses the header's prototypes, callback
typedefs, struct typedefs and #defines and fails on any difference (a missing function, a
parameter of another width or kind, a handle of another kind, a struct field of another name or
type, a wrong return type, a renumbered constant). Run it after every header change:

    python3 tests/bindings/check_ctypes.py [include/libagent/agent.h] [bindings/python/src/libagent]

It reads the binding's sources with `ast` (no import: neither the library nor pydantic is needed).
Rules: a function returning `AgentError *` is declared c_void_p (the owned error pointer); a
`struct AgentX` passed by value is the binding's Structure named AgentX; a pointer to a struct is
POINTER(AgentX); a text is `const char *` (c_char_p, or c_void_p where the binding reads it with
its length) followed by its `size_t` length.
"""

from __future__ import annotations

import ast
import ctypes
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# C scalar types and the ctypes type each must be declared as (typedefs of int32_t are added
# from the header).
SCALARS = {
    "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t, "bool": ctypes.c_bool,
}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def normalise(c_type: str) -> str:
    """`const struct AgentEvent *` -> `const AgentEvent *` (C's `struct` keyword dropped)."""
    c_type = re.sub(r"\bstruct\s+", "", c_type)
    return " ".join(c_type.replace("*", " * ").split()).replace(" *", "*").replace("*", " *").strip()


def parse_header(text: str):
    """(functions, callbacks, structs, defines): name -> (return type, [parameter types]) for the
    first two (types as normalised C text, e.g. "const char *"), struct name -> [(field, type)],
    #define name -> int."""
    defines = {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(AGENT_\w+)\s+(-?\d+)\s*$", text, re.M)}
    code = strip_comments(text)
    code = re.sub(r"^\s*#.*?(?<!\\)$", " ", code, flags=re.M | re.S)

    def param_type(param: str) -> str:
        param = normalise(param)
        if param == "void":
            return "void"
        words = param.split(" ")
        if words[-1] not in ("*", "const") and len(words) > 1:
            words = words[:-1]  # the parameter's name
        return normalise(" ".join(words))

    def params(text: str):
        text = text.strip()
        return [] if text in ("", "void") else [param_type(p) for p in text.split(",")]

    for m in re.finditer(r"typedef\s+int32_t\s+(\w+)\s*;", code):
        SCALARS[m.group(1)] = ctypes.c_int32
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{([^}]*)\}\s*\w+\s*;", code):
        fields = []
        for decl in m.group(2).split(";"):
            decl = normalise(decl)
            if decl:
                *type_words, name = decl.split(" ")
                fields.append((name, normalise(" ".join(type_words))))
        structs[m.group(1)] = fields
    code = re.sub(r"typedef\s+struct\s+\w+\s*\{[^}]*\}\s*\w+\s*;", " ", code)
    callbacks = {}
    for m in re.finditer(r"typedef\s+([\w\s\*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^)]*)\)\s*;", code):
        callbacks[m.group(2)] = (param_type(m.group(1) + " x"), params(m.group(3)))
    code = re.sub(r"typedef[^;]*;", " ", code)
    functions = {}
    for m in re.finditer(r"([\w\s\*]+?)\b(agent_\w+)\s*\(([^)]*)\)\s*;", code):
        functions[m.group(2)] = (param_type(m.group(1).strip() + " x"), params(m.group(3)))
    return functions, callbacks, structs, defines


def binding_namespace(native_py: Path):
    """Evaluates _native.py's Structure classes and every top-level assignment that needs
    nothing but ctypes and earlier ones (CFUNCTYPEs, signature tables, constants)."""
    tree = ast.parse(native_py.read_text())
    ns = {name: getattr(ctypes, name) for name in dir(ctypes) if not name.startswith("_")}
    assigned = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [ns.get(getattr(base, "id", ""), None) for base in node.bases]
            if not bases or not all(isinstance(b, type) and issubclass(b, ctypes.Structure) for b in bases):
                continue
            body = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and getattr(item.targets[0], "id", None) == "_fields_":
                    body["_fields_"] = eval(compile(ast.Expression(item.value), str(native_py), "eval"), ns)  # noqa: S307
            ns[node.name] = type(node.name, tuple(bases), body)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                ns[node.targets[0].id] = eval(compile(ast.Expression(node.value), str(native_py), "eval"), ns)  # noqa: S307 - our own source
                assigned.add(node.targets[0].id)
            except Exception:  # noqa: BLE001 - needs the loaded library or a function: not a declaration
                pass
    return ns, assigned


def error_codes(errors_py: Path):
    tree = ast.parse(errors_py.read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and re.fullmatch(r"OK|ERR_\w+", node.targets[0].id)}


def struct_fields(cls) -> list:
    """A Structure's fields, its bases' first."""
    fields = []
    for klass in reversed(cls.__mro__):
        fields += list(klass.__dict__.get("_fields_", []))
    return fields


def main() -> int:
    header = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "include" / "libagent" / "agent.h"
    package = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "bindings" / "python" / "src" / "libagent"
    functions, callbacks, structs, defines = parse_header(header.read_text())
    ns, assigned = binding_namespace(package / "_native.py")
    problems = []

    # The ctypes declaration of each callback typedef, e.g. AgentDoneFn -> DoneFn.
    callback_types = {}
    for c_name in callbacks:
        py_name = c_name[len("Agent"):]
        py_name = py_name if py_name.endswith("Fn") else py_name + "Fn"
        if py_name in ns:
            callback_types[c_name] = ns[py_name]

    def struct_ok(c_name: str, declared) -> bool:
        return declared is ns.get(c_name) and isinstance(declared, type) and issubclass(declared, ctypes.Structure)

    def pointer_ok(c_type: str, declared) -> bool:
        """A pointer parameter: texts are c_char_p (or c_void_p, read with their length); other
        pointers point to the right scalar, struct or pointer."""
        target = c_type[: -len(" *")].replace("const", "").strip()
        if declared is ctypes.c_char_p:
            return target == "char"
        if declared is ctypes.c_void_p:
            return target in ("char", "void", "AgentError")  # a borrowed text, a user_data, an owned error
        pointee = getattr(declared, "_type_", None)
        if not isinstance(pointee, type) or declared.__name__.startswith("c_"):
            return False
        if target in SCALARS:
            return pointee is SCALARS[target]
        if target in structs:
            return struct_ok(target, pointee)
        if target.endswith("*"):  # char ** (an owned string written back)
            return pointee in (ctypes.c_void_p, ctypes.c_char_p) and target[: -len(" *")].strip() == "char"
        return False

    def type_ok(c_type: str, declared, is_return: bool = False) -> bool:
        if c_type == "void":
            return declared is None
        if c_type in SCALARS:
            return declared is SCALARS[c_type]
        if c_type in callbacks:
            expected = callback_types.get(c_type)
            return expected is not None and declared is expected
        if c_type in structs:  # a handle or struct passed by value
            return struct_ok(c_type, declared)
        if c_type.endswith("*"):
            if is_return:
                if c_type == "AgentError *":
                    return declared is ctypes.c_void_p  # owned: freed with agent_error_free
                return declared in (ctypes.c_char_p, ctypes.c_void_p) if "char" in c_type else declared is ctypes.c_void_p
            return pointer_ok(c_type, declared)
        return False

    def name_of(declared) -> str:
        return getattr(declared, "__name__", repr(declared))

    def check(what: str, c_sig, restype, argtypes) -> None:
        c_ret, c_params = c_sig
        if not type_ok(c_ret, restype, is_return=True):
            problems.append(f"{what}: returns {c_ret}, declared {name_of(restype)}")
        if len(c_params) != len(argtypes):
            problems.append(f"{what}: {len(c_params)} parameters in the header ({', '.join(c_params)}), "
                            f"{len(argtypes)} declared")
            return
        for i, (c_type, declared) in enumerate(zip(c_params, argtypes)):
            if not type_ok(c_type, declared):
                problems.append(f"{what}: parameter {i + 1} is {c_type}, declared {name_of(declared)}")

    for c_name, fields in structs.items():
        declared = ns.get(c_name)
        if declared is None:
            if any(c_name in " ".join(params) for _, params in functions.values()):
                problems.append(f"struct {c_name}: no Structure of that name in _native.py")
            continue
        py_fields = struct_fields(declared)
        if [name for name, _ in py_fields] != [name for name, _ in fields]:
            problems.append(f"struct {c_name}: fields {[n for n, _ in fields]} in the header, "
                            f"{[n for n, _ in py_fields]} declared")
            continue
        for (name, c_type), (_, py_type) in zip(fields, py_fields):
            if not type_ok(c_type, py_type):
                problems.append(f"struct {c_name}.{name}: {c_type} in the header, declared {name_of(py_type)}")
    for c_name, cb in callback_types.items():
        check(f"callback {c_name}", callbacks[c_name], cb._restype_, list(cb._argtypes_))
    table = ns.get("_SIGNATURES", {})
    for name, (restype, argtypes) in table.items():
        if name not in functions:
            problems.append(f"{name}: declared in _native._SIGNATURES, not in {header.name}")
            continue
        check(name, functions[name], restype, argtypes)

    codes = error_codes(package / "_errors.py")
    for name, value in codes.items():
        c_name = "AGENT_" + name
        if defines.get(c_name) != value:
            problems.append(f"_errors.{name} = {value}, {header.name} has {c_name} = {defines.get(c_name)}")
    for c_name, value in defines.items():
        if c_name.startswith("AGENT_ERR_") and c_name[len("AGENT_"):] not in codes:
            problems.append(f"{c_name} ({value}) has no status constant in _errors.py")

    # Constants of _native.py named after the header's (EVENT_SHAPE_FULL = AGENT_EVENT_SHAPE_FULL...).
    for name in sorted(assigned):
        c_name = "AGENT_" + name
        if c_name in defines and ns[name] != defines[c_name]:
            problems.append(f"_native.{name} = {ns[name]}, {header.name} has {c_name} = {defines[c_name]}")
    # Tables from a value to a name: every value of the header's family, with its name.
    tables = {"HOOK_KINDS": "AGENT_HOOK_", "RUN_STATUSES": "AGENT_RUN_", "EVENT_TYPES": "AGENT_EVENT_",
              "UPDATE_TYPES": "AGENT_UPDATE_"}
    for table_name, prefix in tables.items():
        values = ns.get(table_name, {})
        by_name = {v: k for k, v in values.items()} if table_name == "HOOK_KINDS" else values
        family = {c_name: value for c_name, value in defines.items()
                  if c_name.startswith(prefix) and not c_name.startswith("AGENT_EVENT_SHAPE_")}
        for c_name, value in family.items():
            expected = c_name[len(prefix):].lower()
            got = by_name.get(value)
            if table_name == "UPDATE_TYPES" and expected == "none":
                expected = None
            if got != expected:
                problems.append(f"_native.{table_name}: {c_name} = {value} is {got!r} there, not {expected!r}")
        if len(by_name) != len(family):
            problems.append(f"_native.{table_name} has {len(by_name)} entries, {header.name} {len(family)} {prefix}*")

    declared = set(table)
    unused = sorted(set(functions) - declared)
    if problems:
        print(f"ctypes check: {len(problems)} difference(s) between {header} and the Python binding:")
        for problem in problems:
            print("  " + problem)
        return 1
    print(f"ctypes check: {len(declared)} functions, {len(callback_types)} callback types and "
          f"{len([s for s in structs if s in ns])} structs match {header.name}"
          f" ({len(unused)} header functions the binding does not call: {', '.join(unused)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
