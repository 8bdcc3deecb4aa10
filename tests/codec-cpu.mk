# tests/codec-cpu.mk: the CPU codec's unit test and its fuzz target (built by tests/fuzz/run.sh
# with clang's libFuzzer, outside automake).
if HAVE_GTEST
check_PROGRAMS += tests/unit/codec_cpu_test
TESTS += tests/unit/codec_cpu_test
tests_unit_codec_cpu_test_SOURCES = tests/unit/codec_cpu_test.cc
tests_unit_codec_cpu_test_CPPFLAGS = $(osub_cppflags)
tests_unit_codec_cpu_test_LDADD = libmpizip_core.la $(osub_ldadd) $(GTEST_LIBS) -lgtest_main
endif
EXTRA_DIST += tests/fuzz/fuzz_decode.cc tests/fuzz/make_corpus.cc tests/fuzz/run.sh
