"""A linear scan of a state dict's pickle before torch.load sees it
(interop.checkpoints.open_torch).

torch.load(weights_only=True) refuses code, but not shapes that hurt while plain containers are
built: a dict key that is a tuple nested 150,000 deep is hashed recursively in C (a segfault), and
one that expands through memo references to 2**40 shared tuples hashes for ever. This module walks
the opcodes with pickletools.genops — no recursion, one step per opcode — simulating the stack and
the memo with a small record per object (nesting depth, expanded size, whether it is a str), and
refuses, with an InputError naming the file, anything a state dict as torch.save writes it never
holds.

The stack effect of each opcode comes from pickletools' own tables (stack_before / stack_after), so
the opcodes allowed are a list of names, not a branch each.
"""

from __future__ import annotations

import pickletools
import struct
import warnings
from collections.abc import Iterator

from headcount.common.errors import InputError
from headcount.common.files import one_line

MAX_DEPTH = 64  # a state dict nests < 10 deep (dict → tensor → its rebuild arguments → storage id)
SIZE_PER_BYTE = 16  # expanded objects allowed per pickle byte (torch.save's expand to < 1 per byte)
SIZE_SLACK = 4096

# What torch.save's pickler writes for a state dict (protocols 2 to 5): containers, numbers,
# strings, globals (tensor rebuilders, OrderedDict, storage types), persistent ids (storages) and
# the memo.
ALLOWED = frozenset(
    {
        *("PROTO", "FRAME", "STOP", "MARK"),
        *("GLOBAL", "STACK_GLOBAL", "REDUCE", "NEWOBJ", "BUILD", "BINPERSID"),
        *("EMPTY_DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "APPEND", "APPENDS"),
        *("EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"),
        *("BINPUT", "LONG_BINPUT", "MEMOIZE", "BINGET", "LONG_BINGET"),
        *("NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT"),
        *("BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"),
    }
)
SETS = frozenset({"EMPTY_SET", "ADDITEMS", "FROZENSET"})
IN_PLACE = frozenset(
    {"SETITEM", "SETITEMS", "APPEND", "APPENDS", "BUILD"}
)  # they fill stack_before[0]
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_MARK = None  # a MARK on the simulated stack (items are _Item records)


class _Item:
    """What the scan knows of one object: how deep it nests, how many objects it expands to when
    memo references are counted as copies (what hashing or comparing it visits), and whether it is a
    str. A container filled in place updates its record, which the memo and the stack share."""

    __slots__ = ("depth", "size", "is_str")

    def __init__(self, depth: int, size: int, is_str: bool):
        self.depth, self.size, self.is_str = depth, size, is_str


class _Refused(Exception):
    """A rule broken at the current opcode: the reason, which check_state_dict_pickle words as a
    message."""


def check_state_dict_pickle(data: bytes, name: str) -> None:
    """Refuse (InputError naming `name`, the file) a pickle torch.load must not be given: a dict key
    that is not a string, a set, nesting deeper than MAX_DEPTH, an object expanding (through memo
    references) to more than SIZE_PER_BYTE × its length + SIZE_SLACK objects, a memo read of an
    index never stored, an opcode outside ALLOWED, or a malformed pickle. Linear time and memory in
    len(data)."""
    walk = _Walk(SIZE_PER_BYTE * len(data) + SIZE_SLACK)
    try:
        for op, arg, walk.pos in _opcodes(data, name):
            walk.step(op, arg)
    except _Refused as why:
        raise InputError(f"{name}: its pickle, at byte {walk.pos}, {why}") from None


def _opcodes(data: bytes, name: str) -> Iterator[tuple[pickletools.OpcodeInfo, object, int]]:
    """genops' (opcode, argument, position), a malformed pickle as InputError."""
    try:
        with (
            warnings.catch_warnings()
        ):  # decoding a text opcode's argument may warn: no line on stderr
            warnings.simplefilter("ignore")
            yield from pickletools.genops(data)
    except (ValueError, struct.error, OverflowError) as err:  # a bad opcode, a short read, no STOP
        raise InputError(
            f"{name}: its pickle is malformed ({one_line(err, 120)}); torch.save writes a "
            "complete one"
        ) from None


class _Walk:
    """The simulated unpickler: a stack of _Item records and _MARKs, and the memo."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.pos = 0  # the byte offset of the opcode being simulated, for messages
        self.stack: list[_Item | None] = []
        self.memo: dict[int, _Item] = {}

    def step(self, op: pickletools.OpcodeInfo, arg: object) -> None:
        # sets: a state dict has none, and a set's members are hashed like dict keys
        if op.name in SETS:
            raise _Refused(f"builds a set ({op.name}); a state dict holds no sets")
        # only what torch.save writes: any other opcode is a pickle made by hand (or another tool)
        if op.name not in ALLOWED:
            raise _Refused(
                f"uses opcode {op.name}, which torch.save does not write; a state dict's pickle "
                "holds "
                "only dicts, lists, tuples, numbers, strings and tensors"
            )
        if (
            op.name in _PUTS
        ):  # the memo holds the record itself: a later GET shares it, as objects are
            index = len(self.memo) if arg is None else arg
            self.memo[index] = self._top()
            return
        if op.name in _GETS:
            # a GET of an index never PUT is a corrupt pickle (the unpickler raises KeyError)
            if arg not in self.memo:
                raise _Refused(
                    f"reads memo entry {arg}, which was never stored; the file is corrupt"
                )
            self._push(self.memo[arg])
            return
        if op.name == "MARK":
            self.stack.append(_MARK)
            return
        self._combine(op)

    def _combine(self, op: pickletools.OpcodeInfo) -> None:
        """Pop what `op` consumes (pickletools' stack_before, the items above the last MARK for its
        markobject) and push its result, or update the container it fills in place."""
        before, after = op.stack_before, op.stack_after
        marked = pickletools.markobject in before
        fixed = before.index(pickletools.markobject) if marked else len(before)
        items = self._pop_to_mark() if marked else []
        items = self._pop(fixed) + items
        if op.name in ("SETITEM", "SETITEMS"):
            self._check_keys(items[1:])
        if op.name in IN_PLACE:
            target, children = items[0], items[1:]
            self._grow(target, children)
            self._push(target)
            return
        if not after:  # STOP
            if any(entry is _MARK for entry in self.stack):
                raise _Refused("stops with a MARK never closed; the file is corrupt")
            return
        record = _Item(0, 1, after[0] is pickletools.pyunicode)
        self._grow(record, items)
        self._push(record)

    def _check_keys(self, pairs: list[_Item]) -> None:
        # every dict key a str: a state dict maps names to tensors, and only a key is hashed while
        # loading (a tuple key nested deep or shared through the memo crashes or hangs the hash)
        if len(pairs) % 2:
            raise _Refused("sets a dict key without a value; the file is corrupt")
        if not all(key.is_str for key in pairs[::2]):
            raise _Refused(
                "has a dict key that is not a string; a state dict maps names (strings) to tensors"
            )

    def _grow(self, record: _Item, children: list[_Item]) -> None:
        """`record` now also holds `children`: deeper by one than the deepest, larger by their
        sizes."""
        if not children:
            return
        record.depth = max(record.depth, 1 + max(child.depth for child in children))
        record.size += sum(child.size for child in children)
        record.is_str = record.is_str and not children
        # nesting beyond MAX_DEPTH: C code that recurses (hash, repr, ==) must never see it deep
        if record.depth > MAX_DEPTH:
            raise _Refused(f"nests deeper than {MAX_DEPTH} levels; a state dict nests a few")
        # memo references counted as copies: a small pickle that expands to a huge object (shared
        # tuples) makes hashing or comparing it exponential; each record stays ≤ max_size (no big
        # integers)
        if record.size > self.max_size:
            raise _Refused(
                f"holds an object that expands to over {self.max_size:,} objects through memo "
                "references; "
                f"a state dict's expands to at most {SIZE_PER_BYTE} per pickle byte"
            )

    def _push(self, record: _Item) -> None:
        self.stack.append(record)

    def _top(self) -> _Item:
        if not self.stack or self.stack[-1] is _MARK:
            raise _Refused("stores to the memo with nothing on the stack; the file is corrupt")
        return self.stack[-1]

    def _pop(self, count: int) -> list[_Item]:
        """The top `count` items (no MARK among them), bottom first."""
        if count == 0:
            return []
        taken = self.stack[-count:]
        if len(taken) < count or any(entry is _MARK for entry in taken):
            raise _Refused("pops an empty stack; the file is corrupt")
        del self.stack[-count:]
        return taken

    def _pop_to_mark(self) -> list[_Item]:
        """The items above the last MARK, bottom first; the MARK is removed."""
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index] is _MARK:
                items = self.stack[index + 1 :]
                del self.stack[index:]
                return items
        raise _Refused("pops to a MARK never set; the file is corrupt")
