using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Console;

namespace BoundedWork.PostgreSql.Benchmark;

/// <summary>
/// The <c>consumer</c> verb: one consumer node in its own process, started by the driver (<c>--claims-per-worker</c>
/// for the drain shape, <c>--handler-ms</c> and <c>--record-spans</c> for the cluster shape, <c>--witness</c> for the
/// fair-share shape: the handlers' own start and end copied into a table of the benchmark's, see <see cref="Witness"/>). It prints <c>READY</c> once
/// its host has started, then every 100 ms <c>COUNT handled last-ended cpu-ticks</c> and, when recording starts, one
/// <c>S number started</c> line per item (when recording spans, one <c>E number started ended</c> line per item); it stops on <c>STOP</c> or the end of its standard input (the driver went
/// away), and prints <c>STOPPED</c>. Log lines (warnings and errors only) go to standard error.
/// </summary>
internal static class ConsumerNode
{
    public const string QueueName = "bench";

    private static readonly TimeSpan StopTimeout = TimeSpan.FromSeconds(15);

    public static async Task<int> RunAsync(Arguments arguments)
    {
        var connectionString = arguments.Required("connection");
        var schema = arguments.Required("schema");
        var workers = arguments.Int("workers", 2, 1, 64);
        var recordStarts = arguments.Flag("record-starts");
        var retention = TimeSpan.FromMilliseconds(arguments.Int("retention-ms", -1, -1));
        var cleanup = TimeSpan.FromMilliseconds(arguments.Int("cleanup-ms", -1, -1));
        var claimsPerWorker = arguments.Int("claims-per-worker", 2, 1, 1000);
        var recordSpans = arguments.Flag("record-spans");
        var handlerDelay = TimeSpan.FromMilliseconds(arguments.Int("handler-ms", 0, 0, 60_000));
        var witness = arguments.Flag("witness") ? new Witness(connectionString, schema) : null;
        arguments.CheckAllUsed();

        var recorder = new Recorder(recordStarts, recordSpans) { HandlerDelay = handlerDelay, Witness = witness };
        using var host = BuildHost(recorder, workers, builder => builder.UsePostgreSql(connectionString, BenchJson.Default.BenchItem, o =>
        {
            o.Schema = schema;
            o.ClaimsPerWorker = claimsPerWorker;
            if (retention >= TimeSpan.Zero)
            {
                o.CompletedRetention = retention;
            }

            if (cleanup > TimeSpan.Zero)
            {
                o.CleanupInterval = cleanup;
            }
        }));
        using (var start = new CancellationTokenSource(TimeSpan.FromSeconds(60)))
        {
            await host.StartAsync(start.Token);
        }

        var output = Console.Out;
        lock (output)
        {
            output.WriteLine("READY");
            output.Flush();
        }

        using var stop = new CancellationTokenSource();
        var lifetime = host.Services.GetRequiredService<IHostApplicationLifetime>();
        using var stopping = lifetime.ApplicationStopping.Register(stop.Cancel);
        var reporter = Task.Run(() => ReportAsync(recorder, output, stop.Token), CancellationToken.None);
        using var witnessStop = new CancellationTokenSource();
        var witnessCopier = witness is null ? Task.CompletedTask : Task.Run(() => witness.RunAsync(witnessStop.Token), CancellationToken.None);
        var input = new Thread(() =>
        {
            while (Console.In.ReadLine() is { } line && line != "STOP")
            {
            }

            stop.Cancel();
        })
        { IsBackground = true, Name = "stdin" };
        input.Start();

        await reporter;
        using (var deadline = new CancellationTokenSource(StopTimeout))
        {
            await host.StopAsync(deadline.Token);
        }

        // The witness's last runs are in the table before the node says it stopped.
        await witnessStop.CancelAsync();
        await witnessCopier;
        if (witness is not null)
        {
            await witness.FlushAsync(CancellationToken.None);
        }

        Report(recorder, output);
        lock (output)
        {
            output.WriteLine("STOPPED");
            output.Flush();
        }

        return 0;
    }

    /// <summary>
    /// A host with the benchmark queue; <paramref name="storage"/> picks the storage (none: in memory), and
    /// <paramref name="queueOptions"/> sets the queue's own options (the cluster shape's producers: the ordering key).
    /// </summary>
    public static IHost BuildHost(Recorder recorder, int workers, Action<WorkQueueBuilder<BenchItem>>? storage, Action<WorkQueueOptions<BenchItem>>? queueOptions = null)
    {
        var builder = Host.CreateApplicationBuilder([]);
        builder.Logging.ClearProviders()
            .AddSimpleConsole(o => o.SingleLine = true)
            .SetMinimumLevel(LogLevel.Warning);
        builder.Services.Configure<ConsoleLoggerOptions>(o => o.LogToStandardErrorThreshold = LogLevel.Trace);
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = StopTimeout);
        builder.Services.AddSingleton(recorder);
        var queue = builder.Services.AddWorkQueue<BenchItem, BenchHandler>(QueueName, queueOptions);
        storage?.Invoke(queue);
        queue.Configure(o =>
        {
            o.WorkerCount = workers;
            o.RejectionPolicy = RejectionPolicy.Wait;
            o.WaitTimeout = Timeout.InfiniteTimeSpan;
        });
        return builder.Build();
    }

    /// <summary>Prints <c>COUNT</c> (and recorded starts and spans) every 100 ms until <paramref name="cancellationToken"/> is cancelled; the reference consumer reports the same way.</summary>
    internal static async Task ReportAsync(Recorder recorder, TextWriter output, CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(100));
        try
        {
            while (await timer.WaitForNextTickAsync(cancellationToken))
            {
                Report(recorder, output);
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    internal static void Report(Recorder recorder, TextWriter output)
    {
        lock (output)
        {
            while (recorder.TryTakeStart(out var start))
            {
                output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"S {start.Number} {start.Started}"));
            }

            while (recorder.TryTakeSpan(out var span))
            {
                output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"E {span.Number} {span.Started} {span.Ended}"));
            }

            var count = recorder.Count;
            var last = recorder.LastEnded;
            var cpu = Environment.CpuUsage.TotalTime.Ticks;
            output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"COUNT {count} {last} {cpu}"));
            output.Flush();
        }
    }
}
