// buffer_pieces.h - an allreduce's buffers as a list of pieces, one per
// tensor, read as if they were laid end to end: the engine's zero-copy
// fusion. Algorithms address elements of the whole; the walker cuts every
// element range at piece boundaries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace matexcomm {

// One tensor of a fused allreduce (send == recv in place).
struct BufferPiece {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // elements
};

class PieceWalker {
 public:
  // A single buffer (no allocation), or `count` pieces (kept by the caller).
  PieceWalker(const void* send, void* recv, size_t count, size_t element)
      : pieces_(&single_), piece_count_(1), element_(element), single_{send, recv, count} {}
  PieceWalker(const BufferPiece* pieces, size_t piece_count, size_t element)
      : pieces_(pieces), piece_count_(piece_count), element_(element) {
    starts_.reserve(piece_count + 1);
    size_t at = 0;
    for (size_t i = 0; i < piece_count; ++i) {
      starts_.push_back(at);
      at += pieces[i].count;
    }
    starts_.push_back(at);
  }
  PieceWalker(const PieceWalker&) = delete;
  PieceWalker& operator=(const PieceWalker&) = delete;

  // fn(send, recv, at, n) for every piece part of elements [first, first + count):
  // send and recv point at the part, `at` is its offset from `first`.
  template <class Fn>
  void for_each(size_t first, size_t count, Fn&& fn) const {
    if (count == 0) return;
    if (piece_count_ == 1) {
      fn(static_cast<const char*>(single_.send) + first * element_, static_cast<char*>(single_.recv) + first * element_,
         size_t{0}, count);
      return;
    }
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), first) - starts_.begin()) - 1;
    const size_t end = first + count;
    for (size_t at = first; at < end; ++i) {
      const size_t inside = at - starts_[i];
      const size_t n = std::min(end, starts_[i + 1]) - at;
      if (n > 0) {
        fn(static_cast<const char*>(pieces_[i].send) + inside * element_,
           static_cast<char*>(pieces_[i].recv) + inside * element_, at - first, n);
      }
      at += n;
    }
  }

 private:
  const BufferPiece* pieces_;
  size_t piece_count_;
  size_t element_;
  BufferPiece single_;
  std::vector<size_t> starts_;  // piece i holds elements [starts_[i], starts_[i+1])
};

}  // namespace matexcomm
