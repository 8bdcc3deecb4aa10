# p2p: the point-to-point protocol (match message, payload, probes), docs/PROTOCOL.md.
libmpizip_core_la_SOURCES += \
	p2p/channel.h p2p/wire.h p2p/wire.cc \
	p2p/probed_queue.h p2p/probed_queue.cc \
	p2p/send.h p2p/send.cc \
	p2p/recv.h p2p/recv.cc \
	p2p/probe.h p2p/probe.cc
