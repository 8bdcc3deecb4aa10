// What the point-to-point protocol needs to know about a communicator, handed down by src/core
// (which owns the communicator's state): the communicators, the bulk-tag counter, the probed-message
// queue, what each stream compresses to, and the sender's policy.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "kernels/format.h"

namespace mpizip::transport {
class Transport;
}
namespace mpizip::cost {
class Model;
}

namespace mpizip::p2p {

class ProbedQueue;
class StreamRatios;

// How a compressed device buffer is sent (MPIZIP_P2P_PIPELINE).
enum class Pipeline {
  kSplit,           // the raw part leaves as soon as it is separated, while the rest is encoded
  kEncodeThenSend,  // both parts leave once the whole stream is encoded
  kChunked,         // fixed-size chunks, each compressed as a job of its own and sent when done
  kOff,             // device buffers travel uncompressed
};

struct SendPolicy {
  uint64_t min_bytes = 1 << 20;      // host buffers: compress at or above this many bytes
  uint64_t gpu_min_bytes = 4 << 20;  // device buffers: the same
  uint64_t eager_bytes = 16384;  // inline payloads up to this many bytes
  // Messages of at most this many bytes travel bare (wire.h); every other match message is longer.
  uint64_t bare_bytes = 8;
  bool host_compress = false;    // compress host buffers (CPU codec)
  bool checksum = false;         // add a checksum to compressed streams
  Pipeline pipeline = Pipeline::kSplit;
  // Compressed host buffers larger than this travel in chunks of this many bytes (a multiple of
  // 64), so that compression, the wire and decoding overlap (p2p/chunked.h); 0: in one piece.
  uint64_t chunk_bytes = uint64_t{1} << 20;
  // Test hook (MPIZIP_FAULT=send): a chunked or split send fails right after its match message is
  // posted, as a failed compression would; the receiver is told (p2p/send.cc).
  bool fault_after_match = false;
  // MPIZIP_COMPRESS: kAuto compresses above the size thresholds, except streams that do not
  // compress (StreamRatios); kAlways every message whose memory kind compresses (device buffers
  // to other nodes, host buffers with host_compress), whatever its size and its stream's past;
  // kNever none.
  enum class Compress : uint8_t { kAuto, kAlways, kNever };
  Compress compress = Compress::kAuto;
};

struct Channel {
  MPI_Comm comm = MPI_COMM_NULL;    // the application's communicator: match messages
  // Keeps what `transport` points to alive while an operation holds the channel, even once the
  // application has freed the communicator.
  std::shared_ptr<const void> owner;
  transport::Transport* transport = nullptr;   // moves bulk payloads (over the private duplicate)
  std::atomic<uint32_t>* bulk_tags = nullptr;  // next transfer tag (per communicator)
  ProbedQueue* probed = nullptr;
  StreamRatios* ratios = nullptr;  // what each stream compresses to (null: every message tries)
  cost::Model* cost = nullptr;     // when compressing pays (null: the size thresholds alone)
  SendPolicy policy;
};

// The application's side of one message of a protocol datatype.
struct UserBuffer {
  void* ptr = nullptr;           // the elements, back to back (p2p/layout.h packs other layouts)
  uint64_t count = 0;            // elements of `dtype`
  format::DType dtype = format::DType::kFp32;  // the element type of the datatype's signature
  bool device = false;           // ptr is GPU memory
  bool compressible = true;      // the element type is known: the sender may compress
};

// What a message cost and saved, for statistics (filled by the sender and the receiver).
struct Traffic {
  uint64_t app_bytes = 0;
  uint64_t wire_bytes = 0;  // payload bytes as sent (compressed or raw)
  bool compressed = false;
  double codec_seconds = 0;
  double staging_seconds = 0;
};

}  // namespace mpizip::p2p
