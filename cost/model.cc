#include "cost/model.h"

#include <algorithm>
#include <chrono>

namespace mpizip::cost {
namespace {

// Seeds, replaced by this rank's own measurements as its messages complete:
//   GPU: the codec's bf16 encode at 800 GB/s of input from 64 MiB plus 25 us a pass, whatever its
//   size (launches, the per-block phases: osu-bench/results/codec-fast-h100-2026-12-07.json, the
//   ANS mode on an H100: 30 / 60 / 127 / 1359 us to compress 1 / 16 / 64 / 1024 MiB, 30 / 39 /
//   105 / 1065 us to decompress), and a compressed message's other fixed cost of 20 us (the
//   stream's header, the decode's synchronisation). Fit to the split-send on an H100 with MPS,
//   two messages in flight (when-to-compress-h100-2026-12-07.json): always compressing cost 115 us
//   for a 1 MiB message at 12.5 GB/s (84 raw), 130 at 4 MiB at 47 GB/s (102 raw), 301 at 16 MiB at
//   47 GB/s (357 raw); predicted for a message alone at the ratio measured (0.69) 104, 112 and
//   312 us, with one more in flight 81, 87 and 279 (the window's pair: 93, 99, 296). With the
//   count of messages in flight, the cells measured (47 GB/s x 2-16 MiB at a window of 2, 12.5 and
//   47 GB/s x 1-16 MiB at 64) came out at 0.987 or above (when-to-compress-h100-2026-12-08).
//   CPU: the CPU codec's chunked pipeline of bf16 on the 2-core CPU machine, both ranks coding
//   (0.75-0.85 GB/s with MPIZIP_COMPRESS=always over a 1.5 GB/s emulated link), 10 us a message.
constexpr double kGpuEncode = 800e9, kGpuFixed = 20e-6, kGpuLatency = 25e-6;
constexpr double kCpuEncode = 0.8e9, kCpuFixed = 10e-6;
// A peer's link before anything is known: 25 GB/s (200 Gb/s), between the 100 Gb/s Ethernet and
// the 400 GB/s NVLink that users run on. A fast link is found from its first messages.
constexpr double kDefaultLink = 25e9;
// The decaying maximum of a peer's observed link rates loses this much a message.
constexpr double kDecay = 0.98;
// The moving average of the codec's encode rate takes this much of each new measurement.
constexpr double kCodecWeight = 0.25;
// Model::kExplore: one decision in this many to a peer whose link is not the transport's figure
// goes raw, so that a link taken for slow is measured again.

size_t slot(format::DType t) { return static_cast<size_t>(t) & 7; }

}  // namespace

Model::Model(int nranks, double margin)
    : margin_(margin),
      default_link_(kDefaultLink),
      links_(static_cast<size_t>(std::max(nranks, 0))),
      explore_(links_.size(), 0),
      retry_(links_.size(), 0),
      trial_(links_.size(), 0),
      in_flight_(links_.size(), 0) {
  for (auto& per_type : codecs_[static_cast<size_t>(Side::kGpu)]) per_type = Codec{kGpuEncode, kGpuFixed, kGpuLatency};
  for (auto& per_type : codecs_[static_cast<size_t>(Side::kCpu)]) per_type = Codec{kCpuEncode, kCpuFixed};
}

void Model::set_link(int peer, double bytes_per_second) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer < 0 || static_cast<size_t>(peer) >= links_.size() || !(bytes_per_second > 0)) return;
  links_[static_cast<size_t>(peer)] = Link{bytes_per_second, true};
}

void Model::set_default_link(double bytes_per_second) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes_per_second > 0) default_link_ = bytes_per_second;
}

double Model::typical_ratio(format::DType t) {
  // Uniform and trained data of each type (codec-h200.json, codec-cpu.json): the exponent's
  // entropy against the element's width.
  switch (t) {
    case format::DType::kBf16: return 0.66;
    case format::DType::kFp16: return 0.80;
    case format::DType::kFp32: return 0.85;
    case format::DType::kFp64: return 0.92;
    case format::DType::kE4m3:
    case format::DType::kE5m2: return 0.85;
  }
  return 1.0;
}

Prediction Model::predict_locked(int peer, format::DType t, Side side, uint64_t bytes,
                                 double ratio, uint32_t in_flight) const {
  double link_rate = default_link_;
  if (peer >= 0 && static_cast<size_t>(peer) < links_.size() &&
      links_[static_cast<size_t>(peer)].rate > 0)
    link_rate = links_[static_cast<size_t>(peer)].rate;
  const Codec& c = codecs_[static_cast<size_t>(side)][slot(t)];
  const double b = static_cast<double>(bytes);
  Prediction p;
  p.raw_seconds = b / link_rate;
  // The GPU's split-send decodes once the stream is in; the CPU codec's chunks (p2p/chunked.h)
  // decode while later ones travel, so its three stages overlap, at the pipeline's rate.
  const double cpu_rate = c.pipeline > 0 ? c.pipeline : c.rate;
  const double pass = c.latency + b / c.rate;  // the GPU's encode, or its decode
  const double n = 1.0 + static_cast<double>(in_flight);
  p.compressed_seconds = side == Side::kGpu
                             ? std::max(ratio * b / link_rate, pass) + (c.fixed + pass) / n
                             : c.fixed + std::max(ratio * b / link_rate, b / cpu_rate);
  p.compress = ratio < 1.0 && p.compressed_seconds * (1.0 + margin_) < p.raw_seconds;
  // The CPU: raw only because of the pipeline's rate, where the chunks' own encode rate (an upper
  // bound of the pipeline's) would have it compressed: worth a trial now and then.
  p.codec_bound = side == Side::kCpu && !p.compress && ratio < 1.0 &&
                  (c.fixed + std::max(ratio * b / link_rate, b / c.rate)) * (1.0 + margin_) <
                      p.raw_seconds;
  return p;
}

Prediction Model::predict(int peer, format::DType t, Side side, uint64_t bytes, double ratio,
                          uint32_t in_flight) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return predict_locked(peer, t, side, bytes, ratio, in_flight);
}

uint32_t Model::enter(int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer < 0 || static_cast<size_t>(peer) >= in_flight_.size()) return 0;
  return in_flight_[static_cast<size_t>(peer)]++;
}

void Model::leave(int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer < 0 || static_cast<size_t>(peer) >= in_flight_.size()) return;
  uint32_t& n = in_flight_[static_cast<size_t>(peer)];
  if (n > 0) --n;
}

Prediction Model::decide(int peer, format::DType t, Side side, uint64_t bytes, double ratio,
                         uint32_t in_flight) {
  std::lock_guard<std::mutex> lock(mutex_);
  Prediction p = predict_locked(peer, t, side, bytes, ratio, in_flight);
  last_type_[static_cast<size_t>(side)] = static_cast<int>(slot(t));
  const bool known = peer >= 0 && static_cast<size_t>(peer) < links_.size();
  if (p.compress && known && !links_[static_cast<size_t>(peer)].fixed &&
      bytes >= kLearnBytes && ++explore_[static_cast<size_t>(peer)] % kExplore == 0) {
    p.compress = false;  // exploration: the link measured raw again
  } else if (p.codec_bound && side == Side::kCpu && known && bytes >= kLearnBytes) {
    // Exploration: the CPU pipeline measured again, over a trial of messages in a row (one alone,
    // among raw ones, would queue behind them on the link and measure that).
    uint32_t& trial = trial_[static_cast<size_t>(peer)];
    if (trial == 0 && ++retry_[static_cast<size_t>(peer)] % kExplore == 0) trial = kTrial;
    if (trial > 0) {
      --trial;
      p.compress = true;
    }
  }
  (p.compress ? report_.compressed : report_.raw) += 1;
  report_.predicted_seconds += p.compress ? p.compressed_seconds : p.raw_seconds;
  return p;
}

void Model::observe(int peer, format::DType t, Side side, uint64_t app, uint64_t wire,
                    bool compressed, double codec_seconds, double seconds, double now,
                    double codec_start) {
  std::lock_guard<std::mutex> lock(mutex_);
  report_.observed_seconds += seconds;
  double own = codec_seconds;  // the encode's own time
  if (compressed && side == Side::kGpu && codec_start >= 0 && codec_seconds > 0) {
    const double end = codec_start + codec_seconds;
    own = end - std::max(codec_start, gpu_codec_busy_until_);
    gpu_codec_busy_until_ = std::max(gpu_codec_busy_until_, end);
  }
  if (compressed && own > 0 && app >= kLearnBytes) {
    Codec& c = codecs_[static_cast<size_t>(side)][slot(t)];
    // The rate of the bytes beyond a pass's latency (a quarter of the time at least, where a
    // faster GPU's pass takes less than the seed's latency).
    const double busy = std::max(own - c.latency, 0.25 * own);
    const double rate = static_cast<double>(app) / busy;
    c.rate = c.rate * (1 - kCodecWeight) + rate * kCodecWeight;
  }
  if (compressed && side == Side::kCpu && app >= kLearnBytes) {
    // The burst's bytes over the time it had messages in flight, each overlap counted once.
    Codec& c = codecs_[static_cast<size_t>(side)][slot(t)];
    if (now < 0) now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    const double posted = now - seconds;
    if (posted >= c.busy_until || c.burst_bytes == 0) {  // a new burst
      c.before_burst = c.pipeline;
      c.burst_bytes = 0;
      c.burst_seconds = 0;
    }
    c.burst_bytes += static_cast<double>(app);
    c.burst_seconds += std::max(0.0, now - std::max(posted, c.busy_until));
    c.busy_until = std::max(c.busy_until, now);
    const double rate = c.burst_bytes / std::max(c.burst_seconds - c.fixed, 1e-9);
    c.pipeline = std::max(rate, c.before_burst * kDecay);
  }
  if (peer < 0 || static_cast<size_t>(peer) >= links_.size() || app < kLearnBytes) return;
  Link& l = links_[static_cast<size_t>(peer)];
  if (l.fixed) return;
  // A raw message's time is its link's; a compressed one's, less its encoding, is at least its
  // wire bytes' (the encoding overlaps part of the sending): a lower bound of the rate.
  const double wire_seconds = compressed ? std::max(seconds - codec_seconds, 1e-9) : seconds;
  if (!(wire_seconds > 0)) return;
  const double rate = static_cast<double>(wire) / wire_seconds;
  l.rate = std::max(rate, l.rate * kDecay);
}

namespace {
size_t size_class(uint64_t bytes) {
  size_t c = 0;
  while (c < 63 && (uint64_t{1} << (c + 1)) <= bytes) ++c;
  return c;
}
}  // namespace

// The way a class's measurements favour: 1 compressed, 0 raw, -1 none yet (one way unmeasured).
int Model::SizeClass::faster(double margin) const {
  if (tries[0] == 0 || tries[1] == 0) return -1;
  return seconds[1] * (1.0 + margin) < seconds[0] ? 1 : 0;
}

int Model::inherit_locked(size_t c) const {
  // The nearest class within kInheritClasses each side that measured both ways kTries times, in
  // the direction compressing's gain moves: it grows with the size (the fixed costs spread over more
  // bytes), so raw is taken from a larger class and compressed from a smaller one, never the other
  // way (a small class's raw says nothing of where the ways cross above it).
  for (size_t d = 1; d <= kInheritClasses; ++d) {
    for (const size_t n : {c - d, c + d}) {  // c - d wraps past 0 to a huge index: skipped
      if (n >= classes_.size()) continue;
      const SizeClass& k = classes_[n];
      if (k.inherited >= 0 || k.tries[0] < kTries || k.tries[1] < kTries) continue;
      const double slow = std::max(k.seconds[0], k.seconds[1]);
      const double fast = std::min(k.seconds[0], k.seconds[1]);
      if (!(fast > 0) || slow < fast * kClear) continue;  // near the crossover: says nothing
      const int way = k.seconds[1] < k.seconds[0] ? 1 : 0;
      if ((way == 1) == (n < c)) return way;
    }
  }
  return -1;
}

bool Model::collective_compress(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t c = size_class(bytes);
  SizeClass& k = classes_[c];
  const uint64_t call = k.calls++;
  if (call == 0) k.inherited = static_cast<int8_t>(inherit_locked(c));
  bool compress;
  if (k.inherited < 0 && call < 2 * kTries) {
    compress = call < kTries;  // the tries: compressed, then raw
  } else {
    if (k.next_explore == 0) k.next_explore = call + k.explore_every;
    const int f = k.faster(margin_);
    const bool taken = f >= 0 ? f == 1 : k.inherited == 1;
    compress = taken;
    if (call >= k.next_explore) {  // the other way, now and then
      compress = !taken;
      k.last_explore = call;
      k.next_explore = call + k.explore_every;
    }
  }
  (compress ? report_.collectives_compressed : report_.collectives_raw) += 1;
  return compress;
}

void Model::collective_observe(uint64_t bytes, bool compressed, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  SizeClass& k = classes_[size_class(bytes)];
  const int way = compressed ? 1 : 0;
  // An exploration: a call of the way not taken, once the class took one (by its tries' figures or
  // a neighbour's).
  const bool settled = k.inherited >= 0 || (k.tries[0] >= kTries && k.tries[1] >= kTries);
  const int before = k.faster(margin_) >= 0 ? k.faster(margin_) : k.inherited;
  const bool explored = settled && before >= 0 && way != before;
  // The first calls of each way may pay for setting up (pools, mappings, a larger piece's
  // buffers): the tries keep their fastest. An exploration's time replaces its way's (the freshest
  // figure of a way not taken); the way taken averages its calls.
  if (k.tries[way] == 0 || explored)
    k.seconds[way] = seconds;
  else if (k.tries[way] < kTries)
    k.seconds[way] = std::min(k.seconds[way], seconds);
  else
    k.seconds[way] = k.seconds[way] * (1 - kCodecWeight) + seconds * kCodecWeight;
  ++k.tries[way];
  if (!explored) return;
  // An exploration that found its way still the slower spaces the next twice as far (up to
  // kExploreMax calls); one that turned the choice brings them back to kExplore.
  if (k.faster(margin_) == before)
    k.explore_every = std::min<uint64_t>(k.explore_every * 2, kExploreMax);
  else
    k.explore_every = kExplore;
  k.next_explore = k.last_explore + k.explore_every;
}

bool Model::knows_link(int peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer >= 0 && static_cast<size_t>(peer) < links_.size() && links_[static_cast<size_t>(peer)].fixed;
}

double Model::link(int peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer >= 0 && static_cast<size_t>(peer) < links_.size() &&
      links_[static_cast<size_t>(peer)].rate > 0)
    return links_[static_cast<size_t>(peer)].rate;
  return default_link_;
}

double Model::encode_rate(format::DType t, Side side) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return codecs_[static_cast<size_t>(side)][slot(t)].rate;
}

double Model::codec_latency(Side side) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return codecs_[static_cast<size_t>(side)][0].latency;
}

Report Model::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Report r = report_;
  bool any = false;
  for (const Link& l : links_) {
    if (!(l.rate > 0)) continue;
    r.link_min = any ? std::min(r.link_min, l.rate) : l.rate;
    r.link_max = any ? std::max(r.link_max, l.rate) : l.rate;
    any = true;
  }
  for (size_t side = 0; side < 2; ++side) {
    if (last_type_[side] < 0) continue;
    const Codec& c = codecs_[side][static_cast<size_t>(last_type_[side])];
    r.codec_rate[side] = side == static_cast<size_t>(Side::kCpu) && c.pipeline > 0 ? c.pipeline : c.rate;
    r.codec_latency[side] = c.latency;
  }
  return r;
}

}  // namespace mpizip::cost
