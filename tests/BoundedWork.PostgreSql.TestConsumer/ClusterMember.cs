using System.Globalization;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.PostgreSql.TestConsumer;

/// <summary>
/// The consumer's cluster membership, from environment variables: <c>BW_NODE_NAME</c> (the node's name),
/// <c>BW_HEARTBEAT_MS</c> (its heartbeat interval), <c>BW_PIN_WORKERS</c> (pins this many workers locally once
/// started, as an operator's resize does: the adaptive mode is advisory, so the pin holds the count), and
/// <c>BW_REPORT_WORKERS=1</c> (prints <c>WORKERS n</c> each time the executor's worker count changes, and the
/// storage's Information events), <c>BW_CLAIMS_PER_WORKER</c> (the node's claims per worker, default 2).
/// </summary>
public static class ClusterMember
{
    public static void ConfigureStorage<T>(PostgreSqlWorkQueueOptions<T> options)
    {
        if (Environment.GetEnvironmentVariable("BW_NODE_NAME") is { Length: > 0 } name)
        {
            options.NodeName = name;
        }

        if (Environment.GetEnvironmentVariable("BW_HEARTBEAT_MS") is { Length: > 0 } heartbeat)
        {
            options.NodeHeartbeatInterval = TimeSpan.FromMilliseconds(int.Parse(heartbeat, CultureInfo.InvariantCulture));
        }

        if (Environment.GetEnvironmentVariable("BW_CLAIMS_PER_WORKER") is { Length: > 0 } claims)
        {
            options.ClaimsPerWorker = int.Parse(claims, CultureInfo.InvariantCulture);
        }
    }

    public static void ConfigureExecutor(BoundedExecutorOptions options)
    {
        if (PinnedWorkers is not null)
        {
            options.AdaptiveMode = AdaptiveMode.Advisory;
        }
    }

    public static void AddReporter(IServiceCollection services, string queue)
    {
        if (Environment.GetEnvironmentVariable("BW_REPORT_WORKERS") is "1")
        {
            // The storage's audit events too (applied settings, a node joining and leaving are Information).
            services.AddLogging(logging => logging.AddFilter("BoundedWork.PostgreSql", LogLevel.Information));
            services.AddHostedService(provider => new WorkerCountReporter(provider.GetRequiredKeyedService<BoundedExecutor>(queue)));
        }
    }

    public static void PinIfAsked(IServiceProvider services, string queue)
    {
        if (PinnedWorkers is int workers)
        {
            services.GetRequiredKeyedService<BoundedExecutor>(queue).Resize(workers);
            Console.WriteLine("PINNED " + workers.ToString(CultureInfo.InvariantCulture));
        }
    }

    private static int? PinnedWorkers =>
        Environment.GetEnvironmentVariable("BW_PIN_WORKERS") is { Length: > 0 } pin ? int.Parse(pin, CultureInfo.InvariantCulture) : null;

    /// <summary>Prints <c>WORKERS n</c> whenever the executor's worker count is seen to change (looked at every 10 ms).</summary>
    private sealed class WorkerCountReporter(BoundedExecutor executor) : BackgroundService
    {
        protected override async Task ExecuteAsync(CancellationToken stoppingToken)
        {
            var reported = -1;
            while (!stoppingToken.IsCancellationRequested)
            {
                var count = executor.Settings.WorkerCount;
                if (count != reported)
                {
                    Console.WriteLine("WORKERS " + count.ToString(CultureInfo.InvariantCulture));
                    reported = count;
                }

                try
                {
                    await Task.Delay(10, stoppingToken); // the poll's interval: a line per change of the count
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }
}
