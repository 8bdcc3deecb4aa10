// The steps of one piece of the two-shot allreduce (coll/twoshot.h): its receives and
// reduce-scatter sends, the owner's decoding and fold, the all-gather's sends and receives.
#include <algorithm>

#include "coll/twoshot.h"
#include "src/platform/log.h"

namespace mpizip::coll {

using transport::Memory;
using transport::Transfer;

// Starts pieces while slots are free, advances every piece in flight, retires finished ones.
Status TwoShot::advance_pieces() {
  while (next_piece_ < plan_.pieces()) {
    const int slot = static_cast<int>(next_piece_ % static_cast<uint64_t>(slots_));
    if (slot_busy_[slot]) break;
    Piece& p = active_.emplace_back();
    p.j = next_piece_++;
    p.slot = slot;
    slot_busy_[slot] = 1;
    MPIZIP_CHECK(start_piece(p));
  }
  for (Piece& p : active_) {
    MPIZIP_CHECK(rs_sends(p));
    MPIZIP_CHECK(rs_receives(p));
    MPIZIP_CHECK(fold(p));
    MPIZIP_CHECK(ag_sends(p));
    MPIZIP_CHECK(ag_receives(p));
    note_posted(p);
    MPIZIP_CHECK(poll_sends(p.rs_send));
    MPIZIP_CHECK(poll_sends(p.ag_send));
  }
  for (auto it = active_.begin(); it != active_.end();) {
    if (piece_done(*it)) {
      slot_busy_[it->slot] = 0;
      it = active_.erase(it);
    } else {
      ++it;
    }
  }
  if (active_.empty() && next_piece_ == plan_.pieces()) finish();
  return Status::kOk;
}

// Posts the piece's receives (so that data finds its buffer), then its reduce-scatter sends: raw
// pieces at once (or once staged), compressed ones after one batched compression.
Status TwoShot::start_piece(Piece& p) {
  const size_t n = static_cast<size_t>(nranks_);
  p.rs_send.resize(n);
  p.rs_recv.resize(n);
  p.ag_send.resize(n);
  p.ag_recv.resize(n);
  p.inputs.assign(n, nullptr);
  p.streams.assign(n, 0);
  p.rs_sizes.assign(n, 0);
  p.posted.assign(n, 0);
  if (ch_.policy.fault && p.j == 1) return Status::kOutOfMemory;  // MPIZIP_FAULT=allreduce
  const uint64_t rs_tag = make_tag(seq_, Kind::kReduceScatter, p.j);
  const uint64_t ag_tag = make_tag(seq_, Kind::kAllgather, p.j);
  const Memory land_space = staged_ ? Memory::kHost : space_;
  const Range mine = plan_.piece(me_, p.j);
  if (!mine.empty()) {
    if (a_.shape != AllreduceArgs::Shape::kAllgather &&
        (a_.shape != AllreduceArgs::Shape::kBcast || me_ == a_.root))
      p.inputs[me_] = in_at(mine.begin);
    p.folded = false;
  } else {
    p.folded = true;  // nothing to reduce or broadcast
  }
  for (int q = 0; q < nranks_; ++q) {
    if (q == me_) continue;
    const PeerLayout& pl = layout_.peer[q];
    if (!mine.empty() && rs_flows(q, me_)) {
      const uint64_t bytes = compressed_from(q, mine.size()) ? cap_ : mine.size() * eb_;
      MPIZIP_CHECK(post_recv(landing(p, pl.rs_land), bytes, land_space, q, rs_tag, &p.rs_recv[q]));
      ++p.rs_pending;
    }
    const Range theirs = plan_.piece(q, p.j);
    if (theirs.empty() || !ag_flows(q, me_)) continue;
    if (compressed_from(q, theirs.size())) {
      MPIZIP_CHECK(post_recv(landing(p, pl.ag_land), cap_, land_space, q, ag_tag, &p.ag_recv[q]));
    } else if (staged_) {
      MPIZIP_CHECK(post_recv(staging(p, pl.ag_stage), theirs.size() * eb_, Memory::kHost, q, ag_tag,
                             &p.ag_recv[q]));
    } else {
      MPIZIP_CHECK(
          post_recv(out_at(theirs.begin), theirs.size() * eb_, space_, q, ag_tag, &p.ag_recv[q]));
    }
    ++p.ag_pending;
  }
  Job jobs[kMaxRanks];
  int njobs = 0;
  bool enqueued = false;
  for (int q = 0; q < nranks_; ++q) {
    const Range r = plan_.piece(q, p.j);
    if (q == me_ || r.empty() || !rs_flows(me_, q)) continue;
    const PeerLayout& pl = layout_.peer[q];
    if (compressed_to(q, r.size())) {
      jobs[njobs++] = Job{in_at(r.begin), r.size(), work(p, pl.rs_out), cap_};
      p.rs_encoded_peers.push_back(q);
    } else if (staged_) {
      MPIZIP_CHECK(backend_->copy(staging(p, pl.rs_stage), in_at(r.begin), r.size() * eb_));
      enqueued = true;
    } else {
      MPIZIP_CHECK(post_send(in_at(r.begin), r.size() * eb_, space_, q, rs_tag, r.size() * eb_,
                             false, &p.rs_send[q]));
    }
  }
  if (njobs > 0) {
    MPIZIP_CHECK(
        backend_->compress(a_.dtype, jobs, njobs, results(p, kRsEncode), ch_.policy.checksum));
  }
  if (njobs > 0 || enqueued) {
    MPIZIP_CHECK(backend_->fence(&p.rs_fence));
    p.rs_step = SendStep::kEncoding;
  }
  note_posted(p);
  return Status::kOk;
}

void TwoShot::note_posted(Piece& p) {
  for (int q = 0; q < nranks_; ++q) {
    if (p.rs_send[q] != nullptr) p.posted[q] |= kRsOut;
    if (p.rs_recv[q] != nullptr) p.posted[q] |= kRsIn;
    if (p.ag_send[q] != nullptr) p.posted[q] |= kAgOut;
    if (p.ag_recv[q] != nullptr) p.posted[q] |= kAgIn;
  }
}

template <class AppBytes>
Status TwoShot::post_staged(Piece& p, uint64_t tag, std::unique_ptr<Fence>& fence,
                            const std::vector<uint64_t>& sizes, uint64_t PeerLayout::*stage,
                            AppBytes app, std::vector<std::unique_ptr<transport::Transfer>>& sends,
                            SendStep* step) {
  bool done = false;
  MPIZIP_CHECK(ready(*fence, &done));
  if (!done) return Status::kOk;
  fence.reset();
  for (int q = 0; q < nranks_; ++q) {
    if (sizes[q] == 0) continue;
    MPIZIP_CHECK(post_send(staging(p, layout_.peer[q].*stage), sizes[q], Memory::kHost, q, tag,
                           app(q), true, &sends[q]));
  }
  *step = SendStep::kPosted;
  return Status::kOk;
}

// Reduce-scatter sends that waited for the batched compression (and, when staged, for the copy of
// each stream or raw piece to pinned memory).
Status TwoShot::rs_sends(Piece& p) {
  const uint64_t tag = make_tag(seq_, Kind::kReduceScatter, p.j);
  bool done = false;
  if (p.rs_step == SendStep::kEncoding) {
    MPIZIP_CHECK(ready(*p.rs_fence, &done));
    if (!done) return Status::kOk;
    p.rs_fence.reset();
    const Result* res = results(p, kRsEncode);
    bool stage = false;
    for (size_t i = 0; i < p.rs_encoded_peers.size(); ++i) {
      const int q = p.rs_encoded_peers[i];
      const uint64_t n = plan_.piece(q, p.j).size();
      if (res[i].status != static_cast<int32_t>(Status::kOk) || res[i].size > cap_) {
        MPIZIP_WARN("MPI_Allreduce: compressing piece %llu for rank %d failed (%s)",
                    static_cast<unsigned long long>(p.j), q,
                    status_string(Status::from_int(res[i].status)));
        MPIZIP_CHECK(post_empty(q, tag, &p.rs_send[q]));
      } else if (staged_) {
        MPIZIP_CHECK(backend_->copy(staging(p, layout_.peer[q].rs_stage),
                                    work(p, layout_.peer[q].rs_out), res[i].size));
        p.rs_sizes[q] = res[i].size;
        stage = true;
      } else {
        MPIZIP_CHECK(post_send(work(p, layout_.peer[q].rs_out), res[i].size, space_, q, tag,
                               n * eb_, true, &p.rs_send[q]));
      }
    }
    for (int q = 0; q < nranks_ && staged_; ++q) {
      const Range r = plan_.piece(q, p.j);
      if (q == me_ || r.empty() || !rs_flows(me_, q) || compressed_to(q, r.size())) continue;
      MPIZIP_CHECK(post_send(staging(p, layout_.peer[q].rs_stage), r.size() * eb_, Memory::kHost, q,
                             tag, r.size() * eb_, false, &p.rs_send[q]));
    }
    if (!stage) {
      p.rs_step = SendStep::kPosted;
      return Status::kOk;
    }
    MPIZIP_CHECK(backend_->fence(&p.rs_fence));
    p.rs_step = SendStep::kStaging;
  }
  if (p.rs_step == SendStep::kStaging)
    return post_staged(p, tag, p.rs_fence, p.rs_sizes, &PeerLayout::rs_stage,
                       [&](int q) { return plan_.piece(q, p.j).size() * eb_; }, p.rs_send, &p.rs_step);
  return Status::kOk;
}

// The owner's side: each landed piece is decoded (or, when raw, used where it landed) as soon as
// it is there; the pieces that landed since the last call are decoded in one batched call. The
// pieces that complete the set are left compressed for the fold to decode (Policy::fuse).
Status TwoShot::rs_receives(Piece& p) {
  if (p.rs_pending == 0) return Status::kOk;
  const Range mine = plan_.piece(me_, p.j);
  const uint64_t bytes = mine.size() * eb_;
  Job jobs[kMaxRanks];
  int peers[kMaxRanks];
  int njobs = 0;
  for (int q = 0; q < nranks_; ++q) {
    if (p.rs_recv[q] == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*p.rs_recv[q], &done));
    if (!done) continue;
    const uint64_t got = p.rs_recv[q]->received_bytes();
    p.rs_recv[q].reset();
    --p.rs_pending;
    const PeerLayout& pl = layout_.peer[q];
    const uint8_t* src = landing(p, pl.rs_land);
    if (got == 0) {  // the peer's part failed (TwoShot::drain)
      peer_failed(q, p.j);
      p.poisoned = true;
      continue;
    }
    if (staged_) {
      MPIZIP_CHECK(backend_->copy(work(p, pl.rs_dev), src, got));
      src = work(p, pl.rs_dev);
    }
    if (compressed_from(q, mine.size())) {
      peers[njobs] = q;
      jobs[njobs++] = Job{src, got, work(p, pl.rs_temp), bytes};
      p.inputs[q] = work(p, pl.rs_temp);
    } else {
      if (got != bytes) {
        data_error("a reduce-scatter piece arrived with the wrong size", q, p.j);
        p.poisoned = true;
      }
      p.inputs[q] = src;
    }
  }
  // (A prefix reduction folds each contribution into several prefixes: decoded once, here.)
  if (njobs > 0 && p.rs_pending == 0 && ch_.policy.fuse && !prefixes()) {
    for (int i = 0; i < njobs; ++i) {
      p.inputs[peers[i]] = jobs[i].src;
      p.streams[peers[i]] = jobs[i].count;
    }
  } else if (njobs > 0) {
    MPIZIP_CHECK(backend_->decompress(a_.dtype, jobs, njobs, results(p, kRsDecode) + p.rs_decodes));
    p.rs_decodes += njobs;
  }
  return Status::kOk;
}

// Once every contribution has landed: the fold in rank order into this rank's shard of the output,
// then the all-gather's compression of the result (once, for every peer that takes it compressed)
// and, when staged, its copy to pinned memory.
Status TwoShot::fold(Piece& p) {
  if (p.folded || p.rs_pending > 0) return Status::kOk;
  if (p.poisoned) {  // a contribution is missing: nothing to fold, the all-gather sends empties
    MPIZIP_CHECK(backend_->fence(&p.fold_fence));
    p.folded = true;
    p.ag_step = SendStep::kEncoding;
    return Status::kOk;
  }
  if (prefixes()) return fold_prefixes(p);
  const Range mine = plan_.piece(me_, p.j);
  if (a_.shape == AllreduceArgs::Shape::kAlltoall) {
    // Each contribution alone into its place: rank q's piece of this rank's block goes to output
    // block q (shard q), at the piece's offset in the block; a fold of one operand under MAX is
    // that operand, bit for bit, decoded where it came compressed.
    const uint64_t at = mine.begin - plan_.shard(me_).begin;
    for (int q = 0; q < nranks_; ++q) {
      FoldInput one{p.inputs[q], p.streams[q], nullptr};
      if (p.streams[q] != 0) one.temp = work(p, layout_.peer[q].rs_temp);
      MPIZIP_CHECK(backend_->fold(a_.dtype, a_.op, &one, 1, out_at(plan_.shard(q).begin + at),
                                  mine.size(), results(p, kRsDecode) + p.rs_decodes));
      p.rs_decodes += p.streams[q] != 0 ? 1 : 0;
    }
    MPIZIP_CHECK(backend_->fence(&p.fold_fence));
    p.folded = true;
    p.ag_step = SendStep::kEncoding;
    return Status::kOk;
  }
  uint8_t* out = out_at(mine.begin);
  FoldInput in[kMaxRanks];
  int n = 0, streams = 0;
  // An allreduce folds every rank's contribution; a broadcast's owner takes the root's alone
  // (the root's own shard is in its output already).
  for (int q = 0; q < nranks_; ++q) {
    if (a_.shape == AllreduceArgs::Shape::kBcast ? q != a_.root
                                                 : a_.shape == AllreduceArgs::Shape::kAllgather)
      continue;
    in[n] = FoldInput{p.inputs[q], p.streams[q], nullptr};
    if (p.streams[q] != 0) {
      in[n].temp = work(p, layout_.peer[q].rs_temp);
      ++streams;
    }
    ++n;
  }
  if (folds()) {
    MPIZIP_CHECK(backend_->fold(a_.dtype, a_.op, in, n, out, mine.size(),
                                results(p, kRsDecode) + p.rs_decodes));
    p.rs_decodes += streams;
  }
  bool any_to = false, any_raw = false;
  for (int q = 0; q < nranks_; ++q) {
    if (!ag_flows(me_, q)) continue;
    if (compressed_to(q, mine.size()))
      any_to = true;
    else
      any_raw = true;
  }
  if (any_to) {
    const Job job{out, mine.size(), work(p, layout_.ag_out), cap_};
    MPIZIP_CHECK(backend_->compress(a_.dtype, &job, 1, results(p, kAgEncode), ch_.policy.checksum));
  }
  if (any_raw && staged_) {
    MPIZIP_CHECK(backend_->copy(staging(p, layout_.ag_stage_r), out, mine.size() * eb_));
  }
  MPIZIP_CHECK(backend_->fence(&p.fold_fence));
  p.folded = true;
  p.ag_step = SendStep::kEncoding;
  return Status::kOk;
}

// The all-gather's sends of this rank's reduced piece, once it is folded (and compressed); empty
// messages in its place when a contribution failed, so that every receiver reports the error.
Status TwoShot::ag_sends(Piece& p) {
  const uint64_t tag = make_tag(seq_, Kind::kAllgather, p.j);
  const Range mine = plan_.piece(me_, p.j);
  const uint64_t bytes = mine.size() * eb_;
  bool done = false;
  if (prefixes()) return ag_sends_prefixes(p);
  if (p.ag_step == SendStep::kEncoding) {
    MPIZIP_CHECK(ready(*p.fold_fence, &done));
    if (!done) return Status::kOk;
    p.fold_fence.reset();
    check_rs_decodes(p);
    const Result& enc = *results(p, kAgEncode);
    bool stage = false;
    for (int q = 0; q < nranks_; ++q) {
      if (!ag_flows(me_, q)) continue;
      if (p.poisoned) {
        MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
      } else if (compressed_to(q, mine.size())) {
        if (enc.status != static_cast<int32_t>(Status::kOk) || enc.size > cap_) {
          data_error("compressing the reduced piece failed", -1, p.j);
          MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
        } else if (staged_) {
          stage = true;
        } else {
          MPIZIP_CHECK(post_send(work(p, layout_.ag_out), enc.size, space_, q, tag, bytes, true,
                                 &p.ag_send[q]));
        }
      } else if (staged_) {
        MPIZIP_CHECK(post_send(staging(p, layout_.ag_stage_r), bytes, Memory::kHost, q, tag, bytes,
                               false, &p.ag_send[q]));
      } else {
        MPIZIP_CHECK(
            post_send(out_at(mine.begin), bytes, space_, q, tag, bytes, false, &p.ag_send[q]));
      }
    }
    if (!stage) {
      p.ag_step = SendStep::kPosted;
      return Status::kOk;
    }
    p.ag_bytes = enc.size;
    MPIZIP_CHECK(backend_->copy(staging(p, layout_.ag_stage_c), work(p, layout_.ag_out), enc.size));
    MPIZIP_CHECK(backend_->fence(&p.ag_fence));
    p.ag_step = SendStep::kStaging;
  }
  if (p.ag_step == SendStep::kStaging) {
    MPIZIP_CHECK(ready(*p.ag_fence, &done));
    if (!done) return Status::kOk;
    p.ag_fence.reset();
    for (int q = 0; q < nranks_; ++q) {
      if (!ag_flows(me_, q) || !compressed_to(q, mine.size())) continue;
      MPIZIP_CHECK(post_send(staging(p, layout_.ag_stage_c), p.ag_bytes, Memory::kHost, q, tag,
                             bytes, true, &p.ag_send[q]));
    }
    p.ag_step = SendStep::kPosted;
  }
  return Status::kOk;
}

void TwoShot::check_rs_decodes(Piece& p) {
  const uint64_t n = plan_.piece(me_, p.j).size();
  const Result* dec = results(p, kRsDecode);
  for (int i = 0; i < p.rs_decodes && !p.poisoned; ++i) {
    if (dec[i].status != static_cast<int32_t>(Status::kOk) || dec[i].size != n) {
      data_error("a compressed reduce-scatter piece did not decode", -1, p.j);
      p.poisoned = true;
    }
  }
}

// A prefix reduction's fold, once every contribution has landed (decoded): for each peer that
// takes one, its prefix of this rank's piece into a buffer of the slot (compressed for it where it
// takes it so; when staged, a raw one copied to pinned memory), then this rank's own prefix into
// its output, last: in place, that output is this rank's contribution, which the peers' prefixes
// read first (the backend's work runs in order).
Status TwoShot::fold_prefixes(Piece& p) {
  const Range mine = plan_.piece(me_, p.j);
  const uint64_t n = mine.size(), bytes = n * eb_;
  const bool exclusive = a_.shape == AllreduceArgs::Shape::kExscan;
  // Rank q's prefix folds the contributions of ranks 0..k-1; a prefix of one is that contribution.
  auto prefix = [&](int q, void* dst) -> Status {
    const int k = exclusive ? q : q + 1;
    if (k == 1) return backend_->copy(dst, p.inputs[0], bytes);
    return backend_->reduce(a_.dtype, a_.op, p.inputs.data(), k, dst, n);
  };
  Result* enc = results(p, kAgEncode);
  for (int q = 0; q < nranks_; ++q) {
    if (!ag_flows(me_, q)) continue;
    const PeerLayout& pl = layout_.peer[q];
    uint8_t* res = work(p, pl.scan_res);
    MPIZIP_CHECK(prefix(q, res));
    if (compressed_to(q, n)) {
      const Job job{res, n, work(p, pl.scan_out), cap_};
      MPIZIP_CHECK(backend_->compress(a_.dtype, &job, 1, enc + q, ch_.policy.checksum));
    } else if (staged_) {
      MPIZIP_CHECK(backend_->copy(staging(p, pl.scan_stage), res, bytes));
    }
  }
  if (!(exclusive && me_ == 0)) MPIZIP_CHECK(prefix(me_, out_at(mine.begin)));
  MPIZIP_CHECK(backend_->fence(&p.fold_fence));
  p.folded = true;
  p.ag_step = SendStep::kEncoding;
  return Status::kOk;
}

// A prefix reduction's all-gather sends: each peer's own prefix, once folded (and compressed, and,
// when staged, copied to pinned memory); empty messages where a contribution failed.
Status TwoShot::ag_sends_prefixes(Piece& p) {
  const uint64_t tag = make_tag(seq_, Kind::kAllgather, p.j);
  const uint64_t n = plan_.piece(me_, p.j).size(), bytes = n * eb_;
  const Result* enc = results(p, kAgEncode);
  bool done = false;
  if (p.ag_step == SendStep::kEncoding) {
    MPIZIP_CHECK(ready(*p.fold_fence, &done));
    if (!done) return Status::kOk;
    p.fold_fence.reset();
    check_rs_decodes(p);
    p.ag_sizes.assign(static_cast<size_t>(nranks_), 0);
    bool stage = false;
    for (int q = 0; q < nranks_; ++q) {
      if (!ag_flows(me_, q)) continue;
      const PeerLayout& pl = layout_.peer[q];
      if (p.poisoned) {
        MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
      } else if (compressed_to(q, n)) {
        if (enc[q].status != static_cast<int32_t>(Status::kOk) || enc[q].size > cap_) {
          data_error("compressing a prefix failed", -1, p.j);
          MPIZIP_CHECK(post_empty(q, tag, &p.ag_send[q]));
        } else if (staged_) {
          MPIZIP_CHECK(backend_->copy(staging(p, pl.scan_stage), work(p, pl.scan_out), enc[q].size));
          p.ag_sizes[q] = enc[q].size;
          stage = true;
        } else {
          MPIZIP_CHECK(post_send(work(p, pl.scan_out), enc[q].size, space_, q, tag, bytes, true,
                                 &p.ag_send[q]));
        }
      } else if (staged_) {
        MPIZIP_CHECK(post_send(staging(p, pl.scan_stage), bytes, Memory::kHost, q, tag, bytes,
                               false, &p.ag_send[q]));
      } else {
        MPIZIP_CHECK(
            post_send(work(p, pl.scan_res), bytes, space_, q, tag, bytes, false, &p.ag_send[q]));
      }
    }
    if (!stage) {
      p.ag_step = SendStep::kPosted;
      return Status::kOk;
    }
    MPIZIP_CHECK(backend_->fence(&p.ag_fence));
    p.ag_step = SendStep::kStaging;
  }
  if (p.ag_step == SendStep::kStaging)
    return post_staged(p, tag, p.ag_fence, p.ag_sizes, &PeerLayout::scan_stage,
                       [&](int) { return bytes; }, p.ag_send, &p.ag_step);
  return Status::kOk;
}

// The all-gather's receiving side: each landed piece is decoded straight into the output (raw
// pieces landed there already, or are copied there from pinned memory).
Status TwoShot::ag_receives(Piece& p) {
  Job jobs[kMaxRanks];
  Piece::Decode d;
  bool enqueued = false;
  for (int q = 0; q < nranks_ && p.ag_pending > 0; ++q) {
    if (p.ag_recv[q] == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*p.ag_recv[q], &done));
    if (!done) continue;
    const uint64_t got = p.ag_recv[q]->received_bytes();
    p.ag_recv[q].reset();
    --p.ag_pending;
    const Range r = plan_.piece(q, p.j);
    const uint64_t bytes = r.size() * eb_;
    const PeerLayout& pl = layout_.peer[q];
    if (got == 0) {
      peer_failed(q, p.j);  // the owner's part failed, or a contribution to it did
    } else if (compressed_from(q, r.size())) {
      const uint8_t* src = landing(p, pl.ag_land);
      if (staged_) {
        MPIZIP_CHECK(backend_->copy(work(p, pl.ag_dev), src, got));
        src = work(p, pl.ag_dev);
      }
      jobs[d.n++] = Job{src, got, out_at(r.begin), bytes};
      d.counts.push_back(r.size());
    } else if (got != bytes) {
      data_error("an all-gather piece arrived with the wrong size", q, p.j);
    } else if (staged_) {
      MPIZIP_CHECK(backend_->copy(out_at(r.begin), staging(p, pl.ag_stage), bytes));
      enqueued = true;
    }
  }
  if (d.n > 0) {
    d.first = p.ag_decodes;
    MPIZIP_CHECK(backend_->decompress(a_.dtype, jobs, d.n, results(p, kAgDecode) + d.first));
    p.ag_decodes += d.n;
  }
  if (d.n > 0 || enqueued) {
    MPIZIP_CHECK(backend_->fence(&d.fence));
    p.decodes.push_back(std::move(d));
  }
  for (auto it = p.decodes.begin(); it != p.decodes.end();) {
    bool done = false;
    MPIZIP_CHECK(ready(*it->fence, &done));
    if (!done) {
      ++it;
      continue;
    }
    const Result* res = results(p, kAgDecode) + it->first;
    for (int i = 0; i < it->n; ++i) {
      if (res[i].status != static_cast<int32_t>(Status::kOk) || res[i].size != it->counts[i]) {
        data_error("a compressed all-gather piece did not decode", -1, p.j);
      }
    }
    it = p.decodes.erase(it);
  }
  return Status::kOk;
}

Status TwoShot::poll_sends(std::vector<std::unique_ptr<Transfer>>& sends) {
  for (auto& t : sends) {
    if (t == nullptr) continue;
    bool done = false;
    MPIZIP_CHECK(ready(*t, &done));
    if (done) t.reset();
  }
  return Status::kOk;
}

bool TwoShot::piece_done(const Piece& p) const {
  auto idle = [](const std::vector<std::unique_ptr<Transfer>>& v) {
    return std::all_of(v.begin(), v.end(), [](const auto& t) { return t == nullptr; });
  };
  return p.rs_step == SendStep::kPosted && p.rs_pending == 0 && p.folded &&
         p.ag_step == SendStep::kPosted && p.ag_pending == 0 && p.decodes.empty() &&
         idle(p.rs_send) && idle(p.ag_send);
}

}  // namespace mpizip::coll
