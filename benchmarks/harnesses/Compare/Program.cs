using BoundedWork.Benchmarks.Compare;
using BoundedWork.Benchmarks.Infrastructure;

// BoundedExecutor (default and flow off) and the raw channel with the Java harness's method; benchmarks/compare-java.sh
// runs this program beside benchmarks/java/TpeCompare.java and prints one table (see benchmarks/README.md).
//   dotnet run -c Release --project benchmarks/harnesses/Compare -- [--quick] [--items N] [--warmup K] [--rounds R]
//       [--shapes P/W,...] [--item counter|empty] [--java FILE]
//   dotnet run -c Release --project benchmarks/harnesses/Compare -- --report FILE [--java FILE]
return HarnessProgram.Run(() => CompareHarness.Run(args));
