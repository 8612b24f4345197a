using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.TestConsumer;

/// <summary>
/// The "schedule" mode: a node of the queue <c>ticks</c> of <see cref="ScheduledTick"/> that runs the durable schedule
/// <c>pulse</c> (every second). Its handler records each run in <c>&lt;schema&gt;.tick_runs</c> and its effect once per
/// tick in <c>&lt;schema&gt;.tick_effects</c> (an idempotent handler): the witness tables, which the library never writes.
/// </summary>
public static class ScheduleConsumer
{
    public static async Task RunAsync(string connectionString, string schema, int workers, TimeSpan lease)
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders().AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Warning);
        builder.Services.AddSingleton(new TickWitness(NpgsqlDataSource.Create(connectionString), schema));
        builder.Services
            .AddWorkQueue<ScheduledTick, TickWitnessHandler>("ticks", o => o.RetryDelay = TimeSpan.FromMilliseconds(50))
            .UsePostgreSql(connectionString, TickJson.Default.ScheduledTick, o =>
            {
                o.Schema = schema;
                o.LeaseDuration = lease;
                o.PollInterval = TimeSpan.FromMilliseconds(100);
                o.MaxReconnectDelay = TimeSpan.FromMilliseconds(500);
            })
            .Configure(o => o.WorkerCount = workers);
        builder.Services.AddDurableSchedule("pulse", "ticks", RecurringSchedule.Cron("* * * * * *"));

        using var host = builder.Build();
        await host.StartAsync();
        Console.WriteLine("READY");
        await host.WaitForShutdownAsync();
    }
}

public sealed record TickWitness(NpgsqlDataSource DataSource, string Schema);

public sealed class TickWitnessHandler(TickWitness witness, WorkItemContext context) : IBlockingWorkHandler<ScheduledTick>
{
    public void Handle(ScheduledTick item, CancellationToken cancellationToken)
    {
        using var connection = witness.DataSource.OpenConnection();
        using var command = new NpgsqlCommand($"""
            WITH run AS (INSERT INTO {witness.Schema}.tick_runs (scheduled_at, item_id, attempt, pid) VALUES ($1, $2, $3, $4))
            INSERT INTO {witness.Schema}.tick_effects (scheduled_at, item_id) VALUES ($1, $2) ON CONFLICT (scheduled_at) DO NOTHING;
            """, connection);
        command.Parameters.Add(new() { Value = item.ScheduledAt.ToUniversalTime() });
        command.Parameters.Add(new() { Value = context.ItemId });
        command.Parameters.Add(new() { Value = context.Attempt });
        command.Parameters.Add(new() { Value = Environment.ProcessId });
        command.ExecuteNonQuery();
    }
}

[System.Text.Json.Serialization.JsonSerializable(typeof(ScheduledTick))]
internal sealed partial class TickJson : System.Text.Json.Serialization.JsonSerializerContext;
