// Where the linker puts the functions a small-message ping-pong runs
// through: each at a fixed offset in a page of its own.
//
// Medusa's MPI ping-pong ran 0 B at 1.19-1.22x or 1.33-1.39x vader with the
// same machine code, by where its endpoint's instantiation landed
// (docs/decisions.md, "Code layout"). Shared objects load page aligned, so
// what other code (ob1's, opal's, libc's) meets in the caches and
// predictors is each function's offset in its page: padding the code
// before the endpoint by K bytes flipped the timing at some K, and K =
// 4096 changed nothing. Of the three functions below, moving the send by
// 0x50 flipped it, moving either other one did not; which offsets of the
// send are fast depends on where the other two are (page + 0x7f0 fast
// beside their old offsets, slow beside offset 0, where + 0x20 is fast).
// Pinned, code before them, beside them or after them can grow or shrink
// without moving them; a change to one of them moves only itself.
//
// HPAM_HOT_PAGE puts a function at the start of a page (GCC and clang:
// aligned up to the page is honoured for functions). HPAM_HOT_PAGE_AT(n)
// puts it n bytes past the start: n one-byte nops, never run, between the
// page's start and the function's entry (patchable_function_entry's
// prefix, which also records the nops' address in the section
// __patchable_function_entries; nothing reads it). Use for functions run
// on every message, at an offset chosen by measurement (same document).
#pragma once

#define HPAM_HOT_PAGE gnu::aligned(4096)
#define HPAM_HOT_PAGE_AT(n) gnu::aligned(4096), gnu::patchable_function_entry(n, n)
