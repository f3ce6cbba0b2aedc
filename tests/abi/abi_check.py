#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ABI conformance of rkfd's kfd_ioctl.h and of the kfd-uapi crate.

Nothing here knows a single expected number.  libclang enumerates what the
upstream header (and ours) declares; from that list two programs are generated
that print one line per fact:

  * a C program, compiled by gcc once against upstream's <linux/kfd_ioctl.h>
    and once against ours: ours must print exactly what upstream prints;
  * a Rust program that includes rust/kfd-uapi/src/abi.rs (and through it the
    committed bindings.rs): it must print what upstream's C program prints.

A fact the other side cannot express (a struct, field or macro missing from
our header or from the Rust bindings) is a compile error; the error is mapped
back to its line, reported as a failed fact, and the program is recompiled
without it, so one missing item never hides the others.

Run through scripts/abi-check.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RKFD_CACHE = os.environ.get("RKFD_CACHE", "/var/cache/rkfd")
VENV_SITE = (sorted(__import__("glob").glob(os.path.join(RKFD_CACHE, "venv/lib/python3*/site-packages")))
             or [os.path.join(RKFD_CACHE, "venv/lib/python3/site-packages")])[0]
LIBCLANG = os.path.join(os.environ.get("LIBCLANG_PATH") or os.path.join(VENV_SITE, "clang/native"),
                        "libclang.so")
ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Identifiers bindgen renames by appending '_' (bindgen ir/context.rs).
RUST_KEYWORDS = set("""
abstract alignof as async await become box break const continue crate do dyn
else enum extern false final fn for gen if impl in let loop macro match mod move
mut offsetof override priv proc pub pure ref return Self self sizeof static str
struct super trait true try type typeof unsafe unsized use virtual where while
yield bool f32 f64 usize isize u128 i128 u64 i64 u32 i32 u16 i16 u8 i8 _
""".split())

# Fact categories, in report order.  The C program prints all of them; the
# Rust program the ones marked True (ctype and fnmacro are C-only notions).
CATEGORIES = collections.OrderedDict([
    ("sizeof", True),     # sizeof struct/union
    ("alignof", True),    # alignment of struct/union
    ("offsetof", True),   # every field, also inside anonymous unions/structs
    ("fieldsize", True),  # sizeof of every (non-flexible) field
    ("signed", True),     # signedness of every integer (or integer-array) field
    ("enum", True),       # size and signedness of every named enum type
    ("ioctl", True),      # every AMDKFD_IOC_* command number
    ("const", True),      # every integer #define and enum constant (bit pattern)
    ("ctype", False),     # C type (size, signedness) of those constants
    ("fnmacro", False),   # full expansion of every function-like macro
])


def rust_ident(name):
    return name + "_" if name in RUST_KEYWORDS else name


def kernel_src():
    stamp = os.path.join(RKFD_CACHE, "src/source-package")
    try:
        with open(stamp) as f:
            for line in f:
                if line.startswith("dir="):
                    return line[4:].strip()
    except OSError:
        pass
    return None


def include_args(ksrc):
    """Extra compiler flags so <drm/drm.h> resolves (kfd_ioctl.h includes it).

    The host's drm.h (libdrm-dev) if there is one, else the kernel tree's uapi
    copy, searched after the system directories so everything else still
    comes from linux-libc-dev.  __user is stripped by headers_install; the raw
    tree still has it.
    """
    probe = subprocess.run(["gcc", "-E", "-x", "c", "-"], input="#include <drm/drm.h>\n",
                           capture_output=True, text=True)
    if probe.returncode == 0:
        return []
    if not ksrc:
        sys.exit("abi-check: no <drm/drm.h> on the host and no kernel tree (run scripts/setup)")
    return ["-idirafter", os.path.join(ksrc, "include/uapi"), "-D__user="]


# ---------------------------------------------------------------------------
# 1. Enumerate the header with libclang.
# ---------------------------------------------------------------------------

class Spec:
    def __init__(self):
        self.records = []      # (name, 'struct'|'union', [field dicts])
        self.enums = []        # named enum types
        self.ioctls = []       # AMDKFD_IOC_* macro names
        self.consts = []       # (name, 'macro'|'enum')
        self.fnmacros = []     # (name, [params])
        self.problems = []     # declarations this checker does not understand


def extract(header, cflags):
    import clang.cindex as ci
    if not ci.Config.loaded:
        ci.Config.set_library_file(LIBCLANG)
    T = ci.TypeKind
    INT_KINDS = {T.BOOL, T.CHAR_U, T.UCHAR, T.CHAR16, T.CHAR32, T.USHORT, T.UINT, T.ULONG,
                 T.ULONGLONG, T.UINT128, T.CHAR_S, T.SCHAR, T.WCHAR, T.SHORT, T.INT, T.LONG,
                 T.LONGLONG, T.INT128, T.ENUM}
    K = ci.CursorKind
    spec = Spec()
    real = os.path.realpath(header)
    tu = ci.Index.create().parse(
        header, args=["-x", "c", "-std=gnu17"] + cflags,
        options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    errors = [str(d) for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise RuntimeError("libclang cannot parse %s:\n  %s" % (header, "\n  ".join(errors[:10])))

    def here(c):
        return c.location.file is not None and os.path.realpath(c.location.file.name) == real

    def fields(rec, cpre, rpre, out):
        anon = 0
        for f in rec.type.get_fields():
            t = f.type.get_canonical()
            if not IDENT.match(f.spelling):
                # Anonymous struct/union member: transparent in C, a
                # __bindgen_anon_N field (numbered per record) in Rust.
                anon += 1
                fields(t.get_declaration(), cpre, "%s__bindgen_anon_%d." % (rpre, anon), out)
                continue
            cpath, rpath = cpre + f.spelling, rpre + rust_ident(f.spelling)
            if f.is_bitfield():
                spec.problems.append("bit-field %s.%s: not handled" % (rec.spelling, cpath))
                continue
            flex = t.kind == T.INCOMPLETEARRAY
            depth, et = 0, t
            while et.kind in (T.CONSTANTARRAY, T.INCOMPLETEARRAY):
                depth, et = depth + 1, et.element_type.get_canonical()
            out.append(dict(c=cpath, r=rpath, flex=flex, depth=depth,
                            int=et.kind in INT_KINDS))
            if t.kind == T.RECORD and not IDENT.match(t.get_declaration().spelling):
                # A named field of an unnamed struct type: its members have
                # no other home, so they are facts of this record.
                fields(t.get_declaration(), cpath + ".", rpath + ".", out)
            elif et.kind == T.RECORD and depth and not IDENT.match(et.get_declaration().spelling):
                spec.problems.append("array of unnamed records %s.%s: not handled"
                                     % (rec.spelling, cpath))

    for c in tu.cursor.walk_preorder():
        if not here(c):
            continue
        if c.kind in (K.STRUCT_DECL, K.UNION_DECL) and c.is_definition() and IDENT.match(c.spelling):
            out = []
            fields(c, "", "", out)
            spec.records.append((c.spelling, "union" if c.kind == K.UNION_DECL else "struct", out))
        elif c.kind == K.ENUM_DECL and c.is_definition():
            if IDENT.match(c.spelling):
                spec.enums.append(c.spelling)
            for k in c.get_children():
                if k.kind == K.ENUM_CONSTANT_DECL:
                    spec.consts.append((k.spelling, "enum"))

    for c in tu.cursor.get_children():
        if not here(c):
            continue
        if c.kind == K.MACRO_DEFINITION:
            toks = list(c.get_tokens())
            name = c.spelling
            if len(toks) > 1 and toks[1].spelling == "(" and \
                    toks[1].extent.start.offset == toks[0].extent.end.offset:
                params, i = [], 2
                while i < len(toks) and toks[i].spelling != ")":
                    if toks[i].spelling != ",":
                        params.append(toks[i].spelling)
                    i += 1
                spec.fnmacros.append((name, params))
            elif len(toks) == 1:
                pass  # include guard or flag macro: no value
            elif any(t.kind == ci.TokenKind.LITERAL and t.spelling.startswith('"') for t in toks):
                spec.problems.append("string macro %s: not handled" % name)
            elif name.startswith("AMDKFD_IOC_"):
                spec.ioctls.append(name)
            else:
                spec.consts.append((name, "macro"))
        elif c.kind in (K.STRUCT_DECL, K.UNION_DECL, K.ENUM_DECL, K.MACRO_INSTANTIATION,
                        K.INCLUSION_DIRECTIVE):
            pass
        else:
            spec.problems.append("%s %s: not handled" % (c.kind.name, c.spelling))
    return spec


# ---------------------------------------------------------------------------
# 2. Facts: one key, one C statement, one Rust statement (or None).
# ---------------------------------------------------------------------------

class Fact:
    __slots__ = ("key", "cat", "c", "rs")

    def __init__(self, key, cat, c, rs):
        self.key, self.cat, self.c, self.rs = key, cat, c, rs


def facts_of(spec):
    out = []
    for name, kind, flds in spec.records:
        ct = "%s %s" % (kind, name)
        rt = "uapi::%s" % name
        out.append(Fact("sizeof %s" % name, "sizeof",
                        'U("sizeof %s", sizeof(%s));' % (name, ct),
                        'u("sizeof %s", size_of::<%s>() as u64);' % (name, rt)))
        out.append(Fact("alignof %s" % name, "alignof",
                        'U("alignof %s", _Alignof(%s));' % (name, ct),
                        'u("alignof %s", align_of::<%s>() as u64);' % (name, rt)))
        for f in flds:
            k = "%s.%s" % (name, f["c"])
            out.append(Fact("offsetof " + k, "offsetof",
                            'U("offsetof %s", offsetof(%s, %s));' % (k, ct, f["c"]),
                            'u("offsetof %s", offset_of!(%s, %s) as u64);' % (k, rt, f["r"])))
            if not f["flex"]:
                out.append(Fact("fieldsize " + k, "fieldsize",
                                'U("fieldsize %s", sizeof(FLD(%s, %s)));' % (k, ct, f["c"]),
                                'u("fieldsize %s", sz(fp!(%s, %s)));' % (k, rt, f["r"])))
            if f["int"]:
                elem = "FLD(%s, %s)%s" % (ct, f["c"], "[0]" * f["depth"])
                out.append(Fact("signed " + k, "signed",
                                'U("signed %s", SGN(%s));' % (k, elem),
                                'u("signed %s", sg(fp!(%s, %s)));' % (k, rt, f["r"])))
    for e in spec.enums:
        out.append(Fact("enumsize " + e, "enum",
                        'U("enumsize %s", sizeof(enum %s));' % (e, e),
                        'u("enumsize %s", size_of::<uapi::%s>() as u64);' % (e, e)))
        out.append(Fact("enumsigned " + e, "enum",
                        'U("enumsigned %s", ((enum %s)-1 < 0));' % (e, e),
                        'u("enumsigned %s", <uapi::%s as Sgn>::S);' % (e, e)))
    for n in spec.ioctls:
        out.append(Fact("ioctl " + n, "ioctl",
                        'X("ioctl %s", %s);' % (n, n),
                        'x("ioctl %s", uapi::%s as u64);' % (n, n)))
    for n, _origin in spec.consts:
        out.append(Fact("const " + n, "const",
                        'U("const %s", BITS(%s));' % (n, n),
                        'u("const %s", uapi::%s.bits());' % (n, n)))
        out.append(Fact("ctype " + n, "ctype", 'CTYPE("ctype %s", %s);' % (n, n), None))
    for n, params in spec.fnmacros:
        call = "%s(%s)" % (n, ", ".join(params))
        out.append(Fact("fnmacro " + n, "fnmacro",
                        '#ifdef %s\nS("fnmacro %s", XSTR(%s));\n#else\nS("fnmacro %s", "(undefined)");\n#endif'
                        % (n, n, call, n), None))
    return out


C_PRELUDE = r"""/* Generated by tests/abi/abi_check.py: one printed line per ABI fact. */
#include <stdio.h>
#include <stddef.h>
#include <linux/kfd_ioctl.h>
#define U(k, v) printf("%s %llu\n", k, (unsigned long long)(v))
#define X(k, v) printf("%s 0x%08llx\n", k, (unsigned long long)(v))
#define S(k, v) printf("%s %s\n", k, v)
#define FLD(T, f) (((T *)0)->f)
#define SGN(e) ((__typeof__(e))-1 < 0)
/* The value as a bit pattern of its own type's width. */
#define BITS(x) ((unsigned long long)(x) & (~0ULL >> (64 - 8 * sizeof(x))))
#define CTYPE(k, x) printf("%s %zu%c\n", k, sizeof(x), SGN(x) ? 's' : 'u')
#define STR_(...) #__VA_ARGS__
#define XSTR(...) STR_(__VA_ARGS__)
int main(void)
{
"""
C_EPILOGUE = "return 0;\n}"

RS_PRELUDE = r"""// Generated by tests/abi/abi_check.py: one printed line per ABI fact.
#![allow(warnings)]
#[path = "%(abi)s"]
mod uapi;
use core::mem::{align_of, offset_of, size_of};
trait Sgn { const S: u64; }
macro_rules! sgn { ($($t:ty = $s:expr),*) => { $(impl Sgn for $t { const S: u64 = $s; })* } }
sgn!(bool = 0, u8 = 0, u16 = 0, u32 = 0, u64 = 0, u128 = 0, usize = 0,
     i8 = 1, i16 = 1, i32 = 1, i64 = 1, i128 = 1, isize = 1);
impl<T: Sgn, const N: usize> Sgn for [T; N] { const S: u64 = T::S; }
%(flex)s
trait Bits { fn bits(self) -> u64; }
macro_rules! bits { ($($t:ty => $u:ty),*) => { $(impl Bits for $t { fn bits(self) -> u64 { self as $u as u64 } })* } }
bits!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, usize => usize,
      i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize);
fn sz<F>(_: *const F) -> u64 { size_of::<F>() as u64 }
fn sg<F: Sgn>(_: *const F) -> u64 { F::S }
// A raw pointer to a field, only for its type: nothing is read.
macro_rules! fp {
    ($t:ty, $($f:tt)+) => {{
        let m = core::mem::MaybeUninit::<$t>::uninit();
        let p = m.as_ptr();
        unsafe { core::ptr::addr_of!((*p).$($f)+) }
    }};
}
fn u(k: &str, v: u64) { println!("{} {}", k, v); }
fn x(k: &str, v: u64) { println!("{} {:#010x}", k, v); }
fn main() {
    for d in uapi::IOCTLS.iter() { x(&format!("table {}", d.name), d.cmd as u64); }
"""

RS_FLEX_SGN = "impl<T: Sgn> Sgn for uapi::bindings::__IncompleteArrayField<T> { const S: u64 = T::S; }"


# ---------------------------------------------------------------------------
# 3. Build and run, dropping the facts that do not compile.
# ---------------------------------------------------------------------------

def write_program(path, prelude, stmts, epilogue):
    """Writes the program; returns {line number: fact index}."""
    lines = prelude.rstrip("\n").split("\n")
    where = {}
    for i, s in stmts:
        start = len(lines) + 1
        lines.extend(s.split("\n"))
        for ln in range(start, len(lines) + 1):
            where[ln] = i
    lines.extend(epilogue.split("\n"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return where


def build_and_run(kind, facts, workdir, tag, compile_cmd, parse_errors, prelude, epilogue):
    """Compiles the facts, dropping those that fail, and runs the program.

    Returns (values {key: str}, dropped {key: error}, fatal error or None).
    """
    src = os.path.join(workdir, "%s.%s" % (tag, kind))
    exe = os.path.join(workdir, tag)
    live = [(i, f.c if kind == "c" else f.rs) for i, f in enumerate(facts)]
    live = [(i, s) for i, s in live if s is not None]
    dropped = {}
    for _attempt in range(12):
        where = write_program(src, prelude, live, epilogue)
        r = subprocess.run(compile_cmd(src, exe), capture_output=True, text=True)
        if r.returncode == 0:
            break
        bad, unmapped = parse_errors(r.stderr, src, where)
        if not bad:
            # Errors outside the fact lines: the header itself (or abi.rs)
            # does not compile.  Every remaining fact fails; say why once.
            msg = "\n".join(unmapped[:8]) if unmapped else r.stderr.strip()[:2000]
            for i, _ in live:
                dropped[facts[i].key] = "%s program does not compile (see above)" % tag
            return {}, dropped, msg or "compiler failed"
        for i, msg in bad.items():
            dropped[facts[i].key] = msg
        live = [(i, s) for i, s in live if i not in bad]
    else:
        return {}, dropped, "still failing after 12 attempts"
    r = subprocess.run([exe], capture_output=True, text=True)
    if r.returncode != 0:
        return {}, dropped, "%s exited with %d: %s" % (exe, r.returncode, r.stderr[:500])
    values = {}
    for line in r.stdout.splitlines():
        cat, name, v = line.split(" ", 2)  # keys are "<category> <name>"
        values[cat + " " + name] = v
    return values, dropped, None


def gcc_errors(stderr, src, where):
    bad, unmapped = {}, []
    pat = re.compile(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$")
    for line in stderr.splitlines():
        m = pat.match(line)
        if not m:
            continue
        if os.path.realpath(m.group(1)) == os.path.realpath(src) and int(m.group(2)) in where:
            bad.setdefault(where[int(m.group(2))], m.group(3))
        else:
            unmapped.append(line)
    return bad, unmapped


def rustc_errors(stderr, src, where):
    bad, unmapped = {}, []
    real = os.path.realpath(src)

    def lines_of(span):
        while span:
            if os.path.realpath(span["file_name"]) == real:
                yield span["line_start"]
            exp = span.get("expansion")
            span = exp and exp.get("span")

    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("level") != "error":
            continue
        hit = False
        for span in d.get("spans", []):
            if not span.get("is_primary"):
                continue
            for ln in lines_of(span):
                if ln in where:
                    bad.setdefault(where[ln], d["message"])
                    hit = True
                    break
        if not hit and not d["message"].startswith("aborting due to"):
            rendered = (d.get("rendered") or d["message"]).strip()
            unmapped.append(rendered)
    return bad, unmapped


# ---------------------------------------------------------------------------
# 4. Compare and report.
# ---------------------------------------------------------------------------

# The thing a fact is about: its struct/union, enum, ioctl, constant or
# macro.  A test case is one such subject in one section (passed when every
# fact of it holds); the facts are the detail.
SUBJECT_KIND = {"sizeof": "type", "alignof": "type", "offsetof": "type", "fieldsize": "type",
                "signed": "type", "enum": "enum", "ioctl": "ioctl", "const": "const",
                "ctype": "const", "fnmacro": "macro"}


def subject_of(cat, key):
    kind = SUBJECT_KIND.get(cat)
    if kind is None:  # table rows, builds, extraction problems: each its own case
        return "%s %s" % (cat, key)
    name = key.split(" ", 1)[1] if " " in key else key
    return "%s %s" % (kind, name.split(".", 1)[0])


class Report:
    def __init__(self, verbose):
        self.verbose = verbose
        # Test cases (subjects), and the facts they are made of.
        self.passed = 0
        self.failed = 0
        self.facts = 0
        self.facts_failed = 0

    def section(self, title, results):
        """results: list of (category, key, ok, message)."""
        by_cat = collections.OrderedDict()
        subjects = collections.OrderedDict()
        for cat, key, ok, msg in results:
            by_cat.setdefault(cat, []).append((key, ok, msg))
            subj = subject_of(cat, key)
            subjects[subj] = subjects.get(subj, True) and ok
        sp = sum(1 for ok in subjects.values() if ok)
        self.passed += sp
        self.failed += len(subjects) - sp
        print("== %s: %d subjects (a type, enum, ioctl, constant, macro or build each): %d passed, %d failed"
              % (title, len(subjects), sp, len(subjects) - sp))
        order = list(CATEGORIES) + ["table", "build", "extract"]
        for cat, rows in sorted(by_cat.items(), key=lambda kv: order.index(kv[0])):
            p = sum(1 for _, ok, _ in rows if ok)
            f = len(rows) - p
            self.facts += len(rows)
            self.facts_failed += f
            print("  %-10s %5d facts hold %5d failed" % (cat, p, f))
            shown = 0
            for key, ok, msg in rows:
                if ok:
                    if cat == "build":
                        print("      ok   %s" % key)
                    continue
                if shown == 10 and not self.verbose:
                    print("      ... %d more (-v lists all)" % (f - shown))
                    break
                print("      FAIL %s: %s" % (key, msg))
                shown += 1


STRING_OR_SPACE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\s+')


def squeeze(text):
    """A macro expansion without the whitespace between tokens (which only
    reflects how the source was laid out); string literals are kept."""
    return STRING_OR_SPACE.sub(lambda m: "" if m.group(0).isspace() else m.group(0), text)


def compare(facts, expected, actual, dropped, cats, side):
    """Each fact whose category is in cats: expected[key] vs actual[key]."""
    res = []
    keys = set()
    for f in facts:
        if f.cat not in cats or f.key in keys:
            continue
        keys.add(f.key)
        exp, act = expected.get(f.key), actual.get(f.key)
        if f.cat == "fnmacro" and exp is not None and act is not None and squeeze(exp) == squeeze(act):
            act = exp
        if exp is None:
            res.append((f.cat, f.key, False, "not in upstream: %s"
                        % dropped[0].get(f.key, "no value printed")))
        elif act is None:
            res.append((f.cat, f.key, False, "missing: %s" % dropped[1].get(f.key, "no value printed")))
        elif exp != act:
            res.append((f.cat, f.key, False, "upstream %s, %s %s" % (exp, side, act)))
        else:
            res.append((f.cat, f.key, True, ""))
    return res


KMOD_RS = """//! Stand-in for the rkfd module crate: includes abi.rs the way it does.
#![no_std]
#[path = "%s"]
mod uapi;

/// The name of a kfd ioctl command.
pub fn name_of(cmd: u32) -> Option<&'static str> {
    uapi::ioctl_by_nr(uapi::ioc_nr(cmd)).map(|d| d.name)
}

/// A struct with an anonymous union, and the SVM size helper.
pub fn svm(nattr: u32) -> (u32, usize) {
    let a = uapi::kfd_ioctl_dbg_trap_args::default();
    (uapi::amdkfd_ioc_svm(nattr), core::mem::size_of_val(&a))
}
"""


def kernel_rustc_flags(kdir):
    """The rustc command line the kernel build used for its own uapi crate
    (rust/.uapi.o.cmd), minus what names that crate, its inputs and outputs."""
    import shlex
    try:
        with open(os.path.join(kdir, "rust/.uapi.o.cmd")) as f:
            line = f.readline()
    except OSError:
        return None
    words = shlex.split(line.split(":=", 1)[1])
    words = [w for w in words if "=" not in w or w.startswith("-")]  # drop OBJTREE=...
    out, skip = [], False
    for w in words[1:]:  # words[0] is the rustc
        if skip:
            skip = False
        elif w in ("--extern", "--crate-type", "--crate-name", "-L"):
            skip = True
        elif w.startswith(("--emit", "-L", "--sysroot")) or w.endswith(".rs"):
            pass
        else:
            out.append(w)
    return [words[0]] + out


def kernel_crate_check(abi_rs, workdir):
    """abi.rs compiled as the kernel module includes it.

    With a (partly) built test kernel: the kernel's own rustc command line for
    a crate (target spec, kernel core, lints, -Dwarnings from CONFIG_WERROR).
    Without: the kernel's rustc with the lints of the kernel Makefile."""
    root_rs = os.path.join(workdir, "kmod.rs")
    with open(root_rs, "w") as f:
        f.write(KMOD_RS % os.path.realpath(abi_rs))
    kdir = os.environ.get("RKFD_KDIR", "")
    flags = kdir and kernel_rustc_flags(kdir)
    env = dict(os.environ)
    if flags:
        what = "abi.rs in a kernel crate (%s flags of %s)" % (os.path.basename(flags[0]), kdir)
        env["RUSTC_BOOTSTRAP"] = "1"  # as the kernel build does, for its -Z flags
        cmd = flags + ["--emit=obj=%s/kmod.o" % workdir, "--emit=metadata=%s/libkmod.rmeta" % workdir,
                       "--crate-type", "rlib", "--crate-name", "kmod", "-L", "./rust",
                       "--sysroot=/dev/null", root_rs]
        cwd = kdir
    else:
        krustc = os.environ.get("KRUSTC", "/usr/bin/rustc")
        what = "abi.rs no_std with %s and the kernel's lints (no kernel build to borrow flags from)" % krustc
        cmd = [krustc, "--edition=2021", "--crate-type=rlib", "--emit=metadata", "-Cpanic=abort",
               "-Dnon_ascii_idents", "-Dunsafe_op_in_unsafe_fn", "-Wmissing_docs",
               "-Wrust_2018_idioms", "-Wunreachable_pub", "-Dwarnings", "--out-dir", workdir,
               root_rs]
        cwd = None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
        ok, msg = r.returncode == 0, r.stderr.strip()[:3000]
    except OSError as e:
        ok, msg = False, str(e)
    return ("build", what, ok, msg)


def main():
    ap = argparse.ArgumentParser(description="kfd ABI conformance check")
    ap.add_argument("upstream", nargs="?", help="upstream kfd_ioctl.h (default: the kernel tree "
                    "named in $RKFD_CACHE/src/source-package)")
    ap.add_argument("--ours", default=os.path.join(ROOT, "include/uapi/linux/kfd_ioctl.h"))
    ap.add_argument("--abi-rs", default=os.path.join(ROOT, "rust/kfd-uapi/src/abi.rs"))
    ap.add_argument("--no-rust", action="store_true", help="skip the Rust side")
    ap.add_argument("--keep", metavar="DIR", help="keep the generated programs in DIR")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every failure")
    args = ap.parse_args()

    ksrc = kernel_src()
    upstream = args.upstream or (ksrc and os.path.join(ksrc, "include/uapi/linux/kfd_ioctl.h"))
    if not upstream or not os.path.isfile(upstream):
        sys.exit("abi-check: no upstream kfd_ioctl.h (give its path or run scripts/setup)")
    sys.path.insert(0, VENV_SITE)
    cflags = include_args(ksrc)

    workdir = args.keep or tempfile.mkdtemp(prefix="rkfd-abi.")
    os.makedirs(workdir, exist_ok=True)
    report = Report(args.verbose)
    try:
        return run(args, upstream, cflags, workdir, report)
    except RuntimeError as e:  # upstream does not parse: nothing to compare
        print(e)
        report.failed += 1
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        print("abi: %d passed, %d failed (%d facts, %d failed)"
              % (report.passed, report.failed, report.facts, report.facts_failed))


def run(args, upstream, cflags, workdir, report):
    print("upstream: %s" % upstream)
    print("ours:     %s" % args.ours)
    up_spec = extract(upstream, cflags)
    if up_spec.problems:
        report.section("upstream header", [("extract", p, False, "checker cannot express this")
                                            for p in up_spec.problems])
    up_facts = facts_of(up_spec)
    print("upstream: %d records, %d enums, %d ioctls, %d constants, %d function-like macros"
          % (len(up_spec.records), len(up_spec.enums), len(up_spec.ioctls), len(up_spec.consts),
             len(up_spec.fnmacros)))

    # The facts of both headers: a fact only ours has is an extra.
    facts = list(up_facts)
    ours_ok = os.path.isfile(args.ours)
    if ours_ok:
        try:
            ours_spec = extract(args.ours, cflags)
            seen = {f.key for f in facts}
            facts += [f for f in facts_of(ours_spec) if f.key not in seen]
            extra = [p for p in ours_spec.problems if p not in up_spec.problems]
            if extra:
                report.section("our header", [("extract", p, False, "not in upstream, and the "
                                               "checker cannot express it") for p in extra])
        except RuntimeError as e:
            print("ours: %s" % e)

    # --- C: ours against upstream ----------------------------------------------
    def stage(tag, header):
        d = os.path.join(workdir, "inc-" + tag, "linux")
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(header, os.path.join(d, "kfd_ioctl.h"))
        return os.path.dirname(d)

    def gcc(inc):
        # The header is staged as <inc>/linux/kfd_ioctl.h so that the
        # program's #include <linux/kfd_ioctl.h> finds it before the host's.
        return lambda src, exe: ["gcc", "-std=gnu17", "-w", "-fmax-errors=0",
                                 "-ftrack-macro-expansion=0", "-I", inc] + cflags + [src, "-o", exe]

    up_inc = stage("up", upstream)
    up_vals, up_drop, up_fatal = build_and_run("c", facts, workdir, "facts-upstream",
                                               gcc(up_inc), gcc_errors, C_PRELUDE, C_EPILOGUE)
    up_fatal = up_fatal and up_fatal.replace(os.path.join(up_inc, "linux/kfd_ioctl.h"), upstream)
    if up_fatal:
        print("upstream C program does not compile:\n  %s" % up_fatal.replace("\n", "\n  "))
    if ours_ok:
        our_inc = stage("ours", args.ours)
        our_vals, our_drop, our_fatal = build_and_run("c", facts, workdir, "facts-ours",
                                                      gcc(our_inc), gcc_errors, C_PRELUDE,
                                                      C_EPILOGUE)
        our_fatal = our_fatal and our_fatal.replace(os.path.join(our_inc, "linux/kfd_ioctl.h"),
                                                    args.ours)
        if our_fatal:
            print("ours C program does not compile:\n  %s" % our_fatal.replace("\n", "\n  "))
    else:
        our_vals, our_drop = {}, {f.key: "no header at %s" % args.ours for f in facts}
    print()
    report.section("C: ours vs upstream (gcc)",
                   compare(facts, up_vals, our_vals, (up_drop, our_drop), set(CATEGORIES), "ours"))

    if args.no_rust:
        return 0 if report.failed == 0 else 1

    # --- Rust: kfd-uapi against upstream -----------------------------------------
    # Only upstream's facts: extras of our header are already failures above.
    rs_facts = [f for f in up_facts if CATEGORIES[f.cat]]
    # Signedness through bindgen's flexible-array wrapper, only if some
    # flexible array has integer elements (the impl needs the type to exist).
    flex = any(fl["flex"] and fl["int"] for _, _, flds in up_spec.records for fl in flds)
    prelude = RS_PRELUDE % {"abi": os.path.realpath(args.abi_rs), "flex": RS_FLEX_SGN if flex else ""}

    def rustc(src, exe):
        return ["rustc", "--edition=2021", "--error-format=json", "-A", "warnings", "-C",
                "debuginfo=0", src, "-o", exe]

    rs_vals, rs_drop, rs_fatal = build_and_run("rs", rs_facts, workdir, "facts-rust", rustc,
                                               rustc_errors, prelude, "}")
    if rs_fatal:
        print("Rust program does not compile:\n  %s" % rs_fatal.replace("\n", "\n  "))
    results = compare(rs_facts, up_vals, rs_vals, (up_drop, rs_drop), set(CATEGORIES), "rust")
    # The ioctl table: one entry per upstream AMDKFD_IOC_*, nothing else.
    for n in up_spec.ioctls:
        exp, act = up_vals.get("ioctl " + n), rs_vals.get("table " + n)
        if act is None:
            results.append(("table", "table " + n, False, "missing from IOCTLS" if not rs_fatal
                            else "Rust program failed"))
        else:
            results.append(("table", "table " + n, exp == act, "" if exp == act else
                            "upstream %s, IOCTLS %s" % (exp, act)))
    for k in sorted(rs_vals):
        if k.startswith("table ") and k[6:] not in up_spec.ioctls:
            results.append(("table", k, False, "not an upstream ioctl"))
    print()
    report.section("Rust: rust/kfd-uapi (abi.rs + bindings.rs) vs upstream (rustc)", results)

    # --- Rust build checks ------------------------------------------------------------
    results = []
    bindings = os.path.join(os.path.dirname(os.path.realpath(args.abi_rs)), "bindings.rs")
    r = subprocess.run([os.path.join(ROOT, "scripts/gen-uapi-rs"), "--check", "--header", args.ours,
                        "--output", bindings], capture_output=True, text=True)
    results.append(("build", "bindings.rs == gen-uapi-rs(ours)", r.returncode == 0,
                    "drifted (run scripts/gen-uapi-rs):\n" + "\n".join(
                        ("%s%s" % (r.stdout, r.stderr)).strip().splitlines()[:30])))
    results.append(kernel_crate_check(args.abi_rs, workdir))
    print()
    report.section("Rust build", results)
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
