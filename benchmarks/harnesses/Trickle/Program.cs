using BoundedWork.Benchmarks.Infrastructure;
using BoundedWork.Benchmarks.Trickle;

// CPU per item and wake-up latency at fixed arrival rates; benchmarks/trickle.sh runs this program (see
// benchmarks/README.md):
//   dotnet run -c Release --project benchmarks/harnesses/Trickle -- [--quick] [--seconds S] [--warmup S] [--rates R,...]
//       [--contenders NAME,...]
// Each row runs in a child process of its own, so the process CPU clock sees one contender only: this program again,
// started by the harness with --child NAME RATE WARMUP SECONDS.
return HarnessProgram.Run(() => args is [TrickleChild.Verb, .. var row] ? TrickleChild.Run(row) : TrickleHarness.Run(args));
