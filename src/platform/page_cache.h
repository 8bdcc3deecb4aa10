// A per-thread cache of one fact per memory page (src/platform/pointer_kind.cc: whether the page is
// device memory), valid for one generation of the address space. Set-associative, two ways a set,
// the set chosen by a multiplicative hash of the page number: buffers at regular strides (two
// buffers 64 KiB apart, as OSU allocates them) spread over the sets instead of taking turns in one
// slot. Eight sets of two 16-byte entries: 256 bytes, small enough for initial-exec TLS.
#pragma once

#include <cstdint>

namespace mpizip::platform {

class PageCache {
 public:
  static constexpr unsigned kSetBits = 3;
  static constexpr unsigned kSets = 1u << kSetBits;

  // The cached fact of `page` at `generation`: 1 (true), 0 (false) or -1 (not cached).
  int find(uintptr_t page, uint64_t generation) const {
    const Entry* set = sets_[set_of(page)];
    for (int way = 0; way < 2; ++way) {
      if (set[way].generation == generation && (set[way].key >> 1) == page) {
        return static_cast<int>(set[way].key & 1);
      }
    }
    return -1;
  }

  // Records `fact` for `page`: into the set's first way, the one there moving to the second.
  void put(uintptr_t page, uint64_t generation, bool fact) {
    Entry* set = sets_[set_of(page)];
    set[1] = set[0];
    set[0] = Entry{page << 1 | (fact ? 1u : 0u), generation};
  }

 private:
  struct Entry {
    uintptr_t key = 0;        // page number << 1 | fact
    uint64_t generation = 0;  // 0: empty (generations start at 1)
  };
  static unsigned set_of(uintptr_t page) {
    return static_cast<unsigned>((static_cast<uint64_t>(page) * 0x9E3779B97F4A7C15ULL) >>
                                 (64 - kSetBits));
  }
  Entry sets_[kSets][2];
};

}  // namespace mpizip::platform
