using System.Threading.RateLimiting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.TestConsumer;

/// <summary>
/// Code outside the queue that calls a downstream under the queue's cluster rate limiter (mode "limiter"): a node that
/// claims nothing creates a limiter of <c>permitLimit</c> permits, and <c>permitLimit + 2</c> loops acquire one permit
/// each, record it in <c>runs</c> (item id negative, key <c>limiter</c>, node the process id, <c>acquired_at</c> this
/// process's clock right after the grant, started and ended on the database's), hold it for the hold time and let it
/// go. Prints READY once the loops run.
/// </summary>
public static class LimiterClient
{
    public static async Task RunAsync(string connectionString, string schema, string queueName, int permitLimit, TimeSpan hold)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders().AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning);
        builder.Services.AddSingleton(new EffectStore(NpgsqlDataSource.Create(connectionString), schema, TimeSpan.Zero));
        builder.Services
            .AddWorkQueue<Notice, RecordingHandler>(queueName)
            .UsePostgreSql(connectionString, NoticeJson.Default.Notice, o =>
            {
                o.Schema = schema;
                o.Consume = false;
                ClusterMember.ConfigureStorage(o);
            });
        using var host = builder.Build();
        await host.StartAsync();
        var queue = host.Services.GetRequiredService<IPostgreSqlWorkQueue<Notice>>();
        using var limiter = queue.CreateClusterRateLimiter(new PostgreSqlClusterRateLimiterOptions { PermitLimit = permitLimit, QueueLimit = 1_000_000 });
        await using var data = NpgsqlDataSource.Create(connectionString);
        var processId = Environment.ProcessId;
        long next = 0;
        var loops = Enumerable.Range(0, permitLimit + 2).Select(_ => Task.Run(async () =>
        {
            while (true)
            {
                using var lease = await limiter.AcquireAsync(1);
                if (!lease.IsAcquired)
                {
                    continue;
                }

                var acquiredAt = DateTime.UtcNow;
                var id = -((processId * 1_000_000L) + Interlocked.Increment(ref next));
                await using (var start = data.CreateCommand(
                    $"INSERT INTO \"{schema}\".runs (item_id, number, key, node, attempt, started_at, acquired_at) VALUES ($1, -1, 'limiter', $2, 0, clock_timestamp(), $3)"))
                {
                    start.Parameters.Add(new NpgsqlParameter<long> { TypedValue = id });
                    start.Parameters.Add(new NpgsqlParameter<int> { TypedValue = processId });
                    start.Parameters.Add(new NpgsqlParameter<DateTime> { TypedValue = acquiredAt });
                    await start.ExecuteNonQueryAsync();
                }

                if (hold > TimeSpan.Zero)
                {
                    await Task.Delay(hold);
                }

                await using var end = data.CreateCommand($"UPDATE \"{schema}\".runs SET ended_at = clock_timestamp() WHERE item_id = $1");
                end.Parameters.Add(new NpgsqlParameter<long> { TypedValue = id });
                await end.ExecuteNonQueryAsync();
            }
        })).ToArray();
        Console.WriteLine("READY");
        await host.WaitForShutdownAsync();
        _ = loops;
    }
}
