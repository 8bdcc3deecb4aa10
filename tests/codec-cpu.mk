# tests/codec-cpu.mk: the CPU codec's unit test and the fuzz targets (built by tests/fuzz/run.sh
# with clang's libFuzzer, outside automake).
if HAVE_GTEST
check_PROGRAMS += tests/unit/codec_cpu_test
TESTS += tests/unit/codec_cpu_test
tests_unit_codec_cpu_test_SOURCES = tests/unit/codec_cpu_test.cc
tests_unit_codec_cpu_test_CPPFLAGS = $(osub_cppflags)
tests_unit_codec_cpu_test_LDADD = libmpizip_core.la $(osub_ldadd) $(GTEST_LIBS) -lgtest_main
endif
EXTRA_DIST += tests/fuzz/fuzz_decode.cc tests/fuzz/fuzz_decode_fast.cc tests/fuzz/make_corpus.cc tests/fuzz/run.sh \
	tests/fuzz/fuzz_match_header.cc tests/fuzz/fuzz_hello.cc tests/fuzz/fuzz_chunked.cc \
	tests/fuzz/feed_transport.h tests/fuzz/regress/match_header/count-wraps \
	tests/fuzz/regress/match_header/allocation-beyond-payload \
	tests/fuzz/regress/match_header/inline-size-wraps \
	tests/fuzz/regress/chunked/stream-of-another-type tests/fuzz/regress/hello/other-collective-v2
