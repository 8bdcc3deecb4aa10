// When compressing pays: a cost model per communicator, fed by what its messages measured
// (docs/DESIGN.md, "When to compress").
//
// A message of B bytes to a peer takes, raw,
//     t_raw  = B / link
// and compressed to a ratio r, on the GPU (the split-send pipeline: the raw part leaves while the
// rest is encoded, the receiver decodes once the stream is in)
//     t_comp = max(r B / link, pass) + (fixed + pass) / n,   pass = latency + B / encode
// where n is 1 + the messages of at least kLearnBytes to the same peer this rank has in flight:
// alone (n = 1) a message pays its fixed cost, its encode (beside the wire) and its decode in a
// row; among others the passes of one message overlap the wire of the next, so a window of n
// messages costs each max(r B / link, pass) and the pipeline's fill once (OSU's osu_bw posts 64;
// at 47 GB/s, 8 MiB of bf16 lost 8% raw with two in flight, when-to-compress-h100-2026-12-07b),
// and on the CPU (chunks encoded, sent and decoded each while the others are: p2p/chunked.h)
//     t_comp = fixed + max(r B / link, B / encode)
// where `link` is the peer's link rate (bytes/s), `encode` the codec's rate for the element type
// on this rank's memory kind (GPU or CPU; on the GPU decoding is taken as fast), `latency` what a
// GPU codec pass costs whatever its size (launches, per-block phases), and `fixed` a compressed
// message's other fixed cost (the stream's header, the decode's synchronisation). A message travels
// compressed where t_comp x (1 + margin) < t_raw. The constants come from measurement:
//   - the link, per peer: the transport's own figure where it has one (the emulated link's rate),
//     else what the peer's messages of at least kLearnBytes took: raw bytes over the time from
//     post to completion, or the wire bytes of a compressed one over that time less its encoding.
//     A completion is seen late when the application computes before its wait, never early, so the
//     estimate is a decaying maximum of these rates (the fastest recent one, down 2% a message);
//   - the codec on the GPU: the encode time of this rank's compressed messages less the seed's
//     latency (bytes over seconds, a moving average), each job's own time (observe: not the queue
//     of the jobs before it on the one codec stream), decode taken equal to encode (the same
//     kernels' work in reverse; on the H200 bf16 from 256 MiB decodes at 1,030 GB/s against 888
//     encoding, codec-h200.json); seeded from the figures in model.cc;
//   - the codec on the CPU: the chunked pipeline's rate as whole messages see it, since its chunks'
//     encode times alone miss the cores that the receiver's decoding and the progress threads
//     take: application bytes over the time the sender had compressed messages in flight (a burst
//     of messages posted together counts its overlapping times once), a decaying maximum over
//     bursts as the link's; the chunks' encode rate until one is seen. A pipeline seen only on a
//     slow link is a lower bound of its rate: where this rate alone keeps messages raw (the
//     chunks' encode rate, an upper bound of it, would compress them), every kExplore-th such
//     decision starts a trial of kTrial messages sent compressed, so that a faster link finds it;
//   - the ratio: the stream's (p2p::StreamRatios), else the element type's typical one.
// Thread-safe; one per communicator (src/core: CommContext).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/format.h"

namespace mpizip::cost {

// Where the codec runs: the GPU for device buffers, the CPU codec for host ones.
enum class Side : uint8_t { kGpu = 0, kCpu = 1 };

struct Prediction {
  bool compress = false;
  double raw_seconds = 0;
  double compressed_seconds = 0;
  // The CPU codec: raw only because of its pipeline's rate, where its chunks' encode rate would
  // have the message compressed.
  bool codec_bound = false;
};

// What the model has seen and decided, for MPIZIP_STATS.
struct Report {
  uint64_t compressed = 0;         // messages it sent compressed
  uint64_t raw = 0;                // messages it sent raw
  uint64_t collectives_compressed = 0, collectives_raw = 0;  // two-shot calls each way
  double predicted_seconds = 0;    // its predictions of the messages it decided
  double observed_seconds = 0;     // what the same messages took, post to completion at the sender
  double link_min = 0, link_max = 0;  // peers' link rates (bytes/s), of those known
  // The codec as the model uses it, for the element type of each side's last decision ([side];
  // 0 where that side decided nothing): encode bytes/s (the CPU's: its pipeline's where measured)
  // and a pass's latency (seconds; the GPU's).
  double codec_rate[2] = {0, 0};
  double codec_latency[2] = {0, 0};
};

class Model {
 public:
  static constexpr uint64_t kLearnBytes = 256 * 1024;  // smaller messages teach nothing of rate
  static constexpr double kMargin = 0.05;

  // `nranks` peers; `margin`: how much faster compressing must be predicted.
  explicit Model(int nranks, double margin = kMargin);

  // The transport's own figure for the link to `peer` (bytes/s), which observations do not move.
  void set_link(int peer, double bytes_per_second);
  // The link rate assumed for a peer nothing is known of yet (bytes/s).
  void set_default_link(double bytes_per_second);

  // Whether a message of `bytes` of type `t` to `peer` should travel compressed at `ratio`, with
  // `in_flight` other messages to `peer` under way (enter()). Counts the decision (for the
  // report); `observe` later tells what the message took.
  Prediction decide(int peer, format::DType t, Side side, uint64_t bytes, double ratio,
                    uint32_t in_flight = 0);
  // The same prediction, not counted (tests, and callers that only ask).
  Prediction predict(int peer, format::DType t, Side side, uint64_t bytes, double ratio,
                     uint32_t in_flight = 0) const;

  // A message of at least kLearnBytes to `peer` is under way until leave(peer): returns how many
  // others were.
  uint32_t enter(int peer);
  void leave(int peer);

  // A message to `peer` completed: `app` bytes of the application's, `wire` bytes on the link,
  // `codec_seconds` of encoding (0 for a raw one), `seconds` from its post to its completion;
  // `now`: the completion's time in seconds of a steady clock (the clock's own where negative).
  // `codec_start` (GPU; steady clock, seconds; negative where unknown): when its encode job was
  // queued. The GPU's jobs run one after another on one codec stream, so a job's own time is from
  // the later of its start and the end of the jobs seen before it to its end: posted among
  // others, the time from its start to its end also holds the queue of the passes before it
  // (among osu_bw's 64 in flight at 25 GB/s the model took the codec for several times slower
  // than it is and sent part of each window raw), while what the GPU's other work (a peer's
  // decoding on a shared GPU, other ranks) takes from the job stays in its time.
  void observe(int peer, format::DType t, Side side, uint64_t app, uint64_t wire, bool compressed,
               double codec_seconds, double seconds, double now = -1, double codec_start = -1);

  // The two-shot's collectives (coll/twoshot.h), whose time is the whole call's, its pieces'
  // encoding, links and fused decode-folds overlapping on every rank at once: measured per size
  // class (a power of two of the call's bytes) rather than predicted. A class's first kTries calls
  // compress and the next kTries go raw (the tries), then each call takes the way whose calls have
  // been faster (a moving average, with the margin), and now and then the other way, so that a
  // change of load or link is seen: kExplore calls after the tries, then twice as far each time
  // the other way is found still slower (at most kExploreMax calls apart), back to kExplore when it
  // turns the choice. A new class skips its tries where a class within kInheritClasses (a factor
  // of 4) that measured both ways found one kClear times faster in the direction compressing's gain
  // moves (raw from a larger class, compressed from a smaller one): it takes that way at once and
  // measures the other at its first exploration. Where ranks' figures disagree,
  // each rank's hello tells its peers how its own pieces travel.
  bool collective_compress(uint64_t bytes);
  // What such a call took, from its start to its completion on this rank.
  void collective_observe(uint64_t bytes, bool compressed, double seconds);
  static constexpr uint32_t kTries = 2;
  static constexpr uint64_t kExploreMax = 1024;
  static constexpr size_t kInheritClasses = 2;
  static constexpr double kClear = 1.5;
  static constexpr uint32_t kTrial = 8;  // messages of a CPU pipeline's trial
  static constexpr uint64_t kExplore = 32;

  // Whether the transport gave the link to `peer` its figure (set_link).
  bool knows_link(int peer) const;
  // The link rate the model uses for `peer` (bytes/s) and the codec's encode rate.
  double link(int peer) const;
  double encode_rate(format::DType t, Side side) const;
  // What each of the codec's passes costs whatever its size (seconds; the GPU's).
  double codec_latency(Side side) const;
  Report report() const;

  // The typical ratio of a type, where its stream has not told one yet.
  static double typical_ratio(format::DType t);

 private:
  struct Link {
    double rate = 0;     // bytes/s; 0: unknown
    bool fixed = false;  // the transport's figure
  };
  struct Codec {
    double rate = 0;  // encode, bytes/s
    double fixed = 0; // seconds a message
    double latency = 0;  // the GPU's: seconds of each codec pass whatever its size
    double pipeline = 0;  // the CPU's: application bytes/s of whole compressed messages; 0: none
    // The CPU's current burst: compressed messages whose post-to-completion times overlap.
    double busy_until = 0;      // the latest completion seen (steady clock, seconds)
    double burst_bytes = 0, burst_seconds = 0;
    double before_burst = 0;    // `pipeline` when the burst began
  };
  Prediction predict_locked(int peer, format::DType t, Side side, uint64_t bytes, double ratio,
                            uint32_t in_flight) const;

  mutable std::mutex mutex_;
  double margin_;
  double default_link_;
  std::vector<Link> links_;
  std::array<std::array<Codec, 8>, 2> codecs_;  // [side][type's value]
  std::vector<uint64_t> explore_;                 // per peer: decisions to compress (kExplore)
  std::vector<uint64_t> retry_;                   // per peer: decisions the codec kept raw
  std::vector<uint32_t> trial_;                   // per peer: trial messages still to compress
  std::vector<uint32_t> in_flight_;               // per peer: messages entered, not yet left
  double gpu_codec_busy_until_ = 0;               // the latest end of a GPU encode job seen
  std::array<int, 2> last_type_ = {-1, -1};       // [side]: the type of its last decision
  struct SizeClass {
    uint32_t tries[2] = {0, 0};  // calls measured raw [0] and compressed [1]
    double seconds[2] = {0, 0};  // their moving averages
    uint64_t calls = 0;
    int8_t inherited = -1;        // the way a neighbour's figures chose (no tries); -1: none
    uint64_t next_explore = 0;    // the call that next takes the other way; 0: not set yet
    uint64_t last_explore = 0;    // the call that last took it
    uint64_t explore_every = kExplore;
    int faster(double margin) const;
  };
  // The way a new class `c` takes from its neighbours' figures, or -1 (measure it).
  int inherit_locked(size_t c) const;
  std::array<SizeClass, 64> classes_;  // by the call's bytes' log2
  Report report_;
};

}  // namespace mpizip::cost
