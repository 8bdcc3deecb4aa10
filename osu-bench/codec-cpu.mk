# osu-bench/codec-cpu.mk: the CPU codec benchmark (Google Benchmark).
if HAVE_BENCHMARK
noinst_PROGRAMS += osu-bench/codec_cpu_bench
osu_bench_codec_cpu_bench_SOURCES = osu-bench/codec_cpu_bench.cc
osu_bench_codec_cpu_bench_CPPFLAGS = $(osub_cppflags)
osu_bench_codec_cpu_bench_LDADD = libmpizip_core.la $(osub_ldadd) $(BENCHMARK_LIBS)
endif
