using Npgsql;

namespace BoundedWork.OpenTelemetry.Tests;

/// <summary>One throwaway PostgreSQL server for the durable-queue tests; each test uses a schema of its own.</summary>
public sealed class PostgresFixture : IAsyncLifetime
{
    private PostgresServer? _server;

    public string ConnectionString => (_server ?? throw new InvalidOperationException("Not started.")).ConnectionString;

    public static string NewSchema() => "otel_" + Guid.NewGuid().ToString("N")[..12];

    public async Task InitializeAsync() => _server = await PostgresServer.StartAsync();

    public async Task DisposeAsync()
    {
        if (_server is not null)
        {
            NpgsqlConnection.ClearAllPools();
            await _server.DisposeAsync();
        }
    }
}

/// <summary>The tests that listen to activities and meters: never in parallel with each other (listeners are process-wide).</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class TelemetryCollection : ICollectionFixture<PostgresFixture>
{
    public const string Name = "telemetry";
}
