using System.Text.Json;
using PaymentCallbacks.LoadDriver;
using PaymentCallbacks.Shared;

// The load driver of benchmarks/payment-callbacks.sh: its own process, so the ThreadPool it starves is the server's,
// never the one measuring. Every command is bounded in time and stops by itself.
if (args.Length == 0)
{
    Console.Error.WriteLine("""
        Commands:
          open    --url U --rate R --duration S [--method GET|POST] [--merchants N] [--connections N] [--drain S]
                  [--stats-base U --stats-before F --stats-after F] [--json F] [--csv F]
          replay  --base U --rate R --duration S --resize-at S --workers N [--json F] [--csv F]
          stats   --base U [--collect] [--reset-peaks] [--out F]
          memory-queued  --base U --items N --rate R --out F
          memory-workers --base U --add N --out F
          report  --results DIR
          scenario        --base U --scenario seed|saturating|bursts|cpu-burst --contender NAME [--endpoint bounded|naive] [--quick] --out DIR
          scenario-args   --scenario NAME [--quick] [--what server|sweep|min|max|manual-at|manual-workers|duration]
          scenario-report --results DIR
        """);
    return 2;
}

using var cts = new CancellationTokenSource();
Console.CancelKeyPress += (_, e) =>
{
    e.Cancel = true;
    cts.Cancel();
};

try
{
    var options = new Arguments(args[1..]);
    return args[0] switch
    {
        "open" => await Commands.OpenAsync(options, cts.Token),
        "replay" => await Commands.ReplayAsync(options, cts.Token),
        "stats" => await Commands.StatsAsync(options, cts.Token),
        "memory-queued" => await Commands.MemoryQueuedAsync(options, cts.Token),
        "memory-workers" => await Commands.MemoryWorkersAsync(options, cts.Token),
        "report" => Report.Write(options.Required("results")),
        "scenario" => await PaymentCallbacks.LoadDriver.Adaptive.ScenarioCommands.RunAsync(options, cts.Token),
        "scenario-args" => PaymentCallbacks.LoadDriver.Adaptive.ScenarioCommands.Describe(options),
        "scenario-report" => PaymentCallbacks.LoadDriver.Adaptive.ScenarioCommands.Report(options),
        _ => throw new ArgumentException($"Unknown command '{args[0]}'."),
    };
}
catch (ArgumentException e)
{
    Console.Error.WriteLine(e.Message);
    return 2;
}
catch (Exception e) when (e is HttpRequestException or JsonException or IOException or OperationCanceledException)
{
    Console.Error.WriteLine($"{args[0]} failed: {e.Message}");
    return 1;
}
