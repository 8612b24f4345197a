using System.Runtime.InteropServices;
using BoundedWork.PostgreSql.Benchmark;

// The end-to-end benchmark of the durable queue; benchmarks/postgresql.sh runs it (see benchmarks/README.md).
//   run [options]      the driver: starts PostgreSQL, measures, prints the tables on stdout (--shapes cluster: the
//                      cluster limits, benchmarks/cluster-limits.sh)
//   consumer [options] one consumer node; the driver starts these as child processes
//   reference-consumer [options]  the drain shape's hand-written reference (Npgsql only), started the same way
string[] flags = ["quick", "record-starts", "record-spans", "statements", "strict", "witness", "drain-bounded-reference", "bounded"];
if (args.Length == 0 || args[0] is not ("run" or "consumer" or "reference-consumer"))
{
    Console.Error.WriteLine("""
        Usage: run [--quick] [--items N] [--warmup-items N] [--producers P] [--consumers 1,2,4] [--workers W]
                   [--latency-rate R] [--latency-seconds S] [--latency-warmup S]
                   [--bloat SECONDS] [--bloat-rate R] [--bloat-sample S] [--fsync on|off] [--statements] [--server-dir-file F]
                   [--shapes per-item,latency,bulk,drain,cluster] [--drain-items N] [--bulk-batch B] [--drain-claims-per-worker C] [--drain-library-claims-per-worker C] [--drain-bounded-reference] [--bulk-rounds R] [--drain-rounds R]
                   cluster shape: [--cluster-items N] [--cluster-rounds R] [--cluster-consumers 1,2,4] [--cluster-workers W] [--cluster-claims-per-worker C]
                   [--cluster-keys K] [--binding-consumers P] [--binding-workers W] [--handler-ms MS] [--max-running N] [--rate R]
                   [--binding-keys K] [--max-running-per-key M] [--binding-seconds S] [--binding-warmup S] [--cluster-out DIR]
                   [--command-line TEXT] [--commit TEXT] [--strict]
                   fair shape: [--fair-consumers P] [--fair-workers W] [--fair-claims-per-worker C] [--fair-handler-ms MS] [--fair-load X] [--fair-tenants N] [--fair-heavy X]
                   [--fair-heavy-weight W] [--fair-bound B] [--fair-seconds S] [--fair-warmup S] [--fair-rounds R] [--fair-backlog-seconds S]
                   [--fair-reference-seconds S]
               consumer --connection CS --schema S [--workers W] [--claims-per-worker C] [--record-starts] [--record-spans] [--witness] [--handler-ms MS]
                        [--retention-ms MS] [--cleanup-ms MS]
               reference-consumer --connection CS --schema S --channel C [--workers W] [--claims-per-worker C] [--bounded]
        """);
    return 2;
}

try
{
    var arguments = new Arguments(args[1..], flags.ToHashSet(StringComparer.Ordinal));
    if (args[0] == "consumer")
    {
        return await ConsumerNode.RunAsync(arguments);
    }

    if (args[0] == "reference-consumer")
    {
        return await ReferenceConsumer.RunAsync(arguments);
    }

    using var cancellation = new CancellationTokenSource();
    Console.CancelKeyPress += (_, e) =>
    {
        e.Cancel = true;
        cancellation.Cancel();
    };
    using var terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, context =>
    {
        context.Cancel = true;
        cancellation.Cancel();
    });
    using var hangUp = PosixSignalRegistration.Create(PosixSignal.SIGHUP, context =>
    {
        context.Cancel = true;
        cancellation.Cancel();
    });
    return await Driver.RunAsync(arguments, cancellation.Token);
}
catch (ArgumentException e)
{
    Console.Error.WriteLine(e.Message);
    return 2;
}
catch (OperationCanceledException)
{
    Console.Error.WriteLine("Interrupted; the consumers and the server were stopped.");
    return 130;
}
catch (Exception e) when (e is TimeoutException or InvalidOperationException or Npgsql.NpgsqlException or IOException)
{
    Console.Error.WriteLine($"The benchmark failed: {e}");
    return 1;
}
