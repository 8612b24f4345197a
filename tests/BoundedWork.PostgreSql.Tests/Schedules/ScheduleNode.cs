using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests.Schedules;

/// <summary>Where the witness handler records each run: a table of the test's own, which the library never writes.</summary>
public sealed record Witness(string ConnectionString, string Schema, string Node)
{
    public static async Task CreateTableAsync(PostgresFixture postgres, string schema) =>
        await postgres.ExecuteAsync($"CREATE TABLE {schema}.witness (schedule text NOT NULL, scheduled_at timestamptz NOT NULL, triggered boolean NOT NULL, node text NOT NULL, item_id bigint NOT NULL)");
}

/// <summary>Records each tick it runs in the witness table.</summary>
public sealed class WitnessHandler(Witness witness, WorkItemContext context) : IBlockingWorkHandler<ScheduledTick>
{
    public void Handle(ScheduledTick item, CancellationToken cancellationToken)
    {
        using var connection = new NpgsqlConnection(witness.ConnectionString);
        connection.Open();
        using var command = new NpgsqlCommand($"INSERT INTO {witness.Schema}.witness (schedule, scheduled_at, triggered, node, item_id) VALUES ($1, $2, $3, $4, $5)", connection);
        command.Parameters.Add(new() { Value = item.Schedule });
        command.Parameters.Add(new() { Value = item.ScheduledAt.ToUniversalTime() });
        command.Parameters.Add(new() { Value = item.Triggered });
        command.Parameters.Add(new() { Value = witness.Node });
        command.Parameters.Add(new() { Value = context.ItemId });
        command.ExecuteNonQuery();
    }
}

/// <summary>A wall clock for one node: the system's, shifted by an offset the test can step, or frozen at an instant; timers and timestamps stay real.</summary>
public sealed class SteppedClock : TimeProvider
{
    private long _offsetTicks;
    private long _frozenUtcTicks = -1;

    public TimeSpan Offset
    {
        get => TimeSpan.FromTicks(Interlocked.Read(ref _offsetTicks));
        set => Interlocked.Exchange(ref _offsetTicks, value.Ticks);
    }

    public void Freeze(DateTimeOffset at) => Interlocked.Exchange(ref _frozenUtcTicks, at.UtcTicks);

    public override DateTimeOffset GetUtcNow() =>
        Interlocked.Read(ref _frozenUtcTicks) is var frozen and >= 0
            ? new DateTimeOffset(frozen, TimeSpan.Zero)
            : System.GetUtcNow() + Offset;
}

/// <summary>A node in this process: a host with a PostgreSQL queue of <see cref="ScheduledTick"/> and durable schedules.</summary>
public sealed class ScheduleNode : IAsyncDisposable
{
    private ScheduleNode(IHost host) => Host = host;

    public IHost Host { get; }

    public IDurableSchedules Schedules => Host.Services.GetRequiredService<IDurableSchedules>();

    public static async Task<ScheduleNode> StartAsync(string connectionString, string schema, string node, Action<IServiceCollection> schedules, TimeProvider? clock = null, Action<PostgreSqlWorkQueueOptions<ScheduledTick>>? storage = null, Action<WorkQueueOptions<ScheduledTick>>? queue = null)
    {
        var builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders();
        if (Environment.GetEnvironmentVariable("BOUNDEDWORK_TEST_LOG") is "1")
        {
            builder.Logging.AddSimpleConsole(o => o.SingleLine = true).SetMinimumLevel(LogLevel.Debug);
        }

        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromSeconds(10));
        if (clock is not null)
        {
            builder.Services.AddSingleton(clock);
        }

        builder.Services.AddSingleton(new Witness(connectionString, schema, node));
        builder.Services
            .AddWorkQueue<ScheduledTick, WitnessHandler>("ticks", o => queue?.Invoke(o))
            .UsePostgreSql(connectionString, ScheduleJson.Default.ScheduledTick, o =>
            {
                o.Schema = schema;
                o.LeaseDuration = TimeSpan.FromSeconds(2);
                o.PollInterval = TimeSpan.FromMilliseconds(100);
                o.MaxReconnectDelay = TimeSpan.FromMilliseconds(500);
                storage?.Invoke(o);
            })
            .Configure(o => o.WorkerCount = 2);
        schedules(builder.Services);
        var host = builder.Build();
        try
        {
            await host.StartAsync();
        }
        catch
        {
            await ((IAsyncDisposable)host).DisposeAsync();
            throw;
        }

        return new ScheduleNode(host);
    }

    private int _disposed;

    /// <summary>Stops the node; a second call does nothing (a test may stop a node before its <c>await using</c> ends).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 1)
        {
            return;
        }

        await Host.StopAsync();
        Host.Dispose();
    }
}

[System.Text.Json.Serialization.JsonSerializable(typeof(ScheduledTick))]
internal sealed partial class ScheduleJson : System.Text.Json.Serialization.JsonSerializerContext;
