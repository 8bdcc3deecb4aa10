# p2p: the point-to-point protocol (match message, payload, probes), docs/PROTOCOL.md.
libmpizip_core_la_SOURCES += \
	p2p/channel.h p2p/wire.h p2p/wire.cc \
	p2p/probed_queue.h p2p/probed_queue.cc \
	p2p/send.h p2p/send.cc \
	p2p/chunked.h p2p/chunked.cc \
	p2p/recv.h p2p/recv.cc \
	p2p/probe.h p2p/probe.cc \
	p2p/staged.h p2p/staged.cc \
	p2p/layout.h p2p/layout.cc \
	p2p/stream_ratios.h p2p/stream_ratios.cc
if HAVE_CUDA
libmpizip_core_la_SOURCES += p2p/gpu_codec.h p2p/gpu_codec.cc
else
libmpizip_core_la_SOURCES += p2p/gpu_codec.h p2p/gpu_codec_none.cc
endif
