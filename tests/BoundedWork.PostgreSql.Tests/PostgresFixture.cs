using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>One real PostgreSQL server for every test of the collection; each test works in a schema of its own.</summary>
public sealed class PostgresFixture : IAsyncLifetime
{
    private PostgresServer? _server;

    public PostgresServer Server => _server ?? throw new InvalidOperationException("Not started.");

    public string ConnectionString => Server.ConnectionString;

    public async Task InitializeAsync() => _server = await PostgresServer.StartAsync();

    public async Task DisposeAsync()
    {
        if (_server is not null)
        {
            NpgsqlConnection.ClearAllPools();
            await _server.DisposeAsync();
        }
    }

    /// <summary>A new schema name, with the tables the test consumers write to (deliveries, effects, starts of long handlers, cancellations).</summary>
    public async Task<string> NewSchemaAsync()
    {
        var schema = "t_" + Guid.NewGuid().ToString("N")[..12];
        await ExecuteAsync($"""
            CREATE SCHEMA {schema};
            CREATE TABLE {schema}.deliveries (item_id bigint NOT NULL, number integer NOT NULL, attempt integer NOT NULL, node integer NOT NULL, traceparent text);
            CREATE TABLE {schema}.effects (item_id bigint PRIMARY KEY, number integer NOT NULL, node integer NOT NULL);
            CREATE TABLE {schema}.starts (item_id bigint NOT NULL, node integer NOT NULL);
            CREATE TABLE {schema}.cancellations (item_id bigint NOT NULL, node integer NOT NULL);
            """);
        return schema;
    }

    public async Task ExecuteAsync(string sql)
    {
        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }

    public async Task<T> ScalarAsync<T>(string sql)
    {
        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql, connection);
        var value = await command.ExecuteScalarAsync();
        if (value is null or DBNull && default(T) is not null)
        {
            // Unboxing no value into a value type would throw a bare NullReferenceException.
            throw new InvalidOperationException($"No value (no row, or NULL) for a {typeof(T).Name} from: {sql}");
        }

        return (T)value!;
    }

    public async Task<List<(long Id, int Number, int Attempt, int Node)>> DeliveriesAsync(string schema)
    {
        var rows = new List<(long, int, int, int)>();
        await using var connection = new NpgsqlConnection(ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT item_id, number, attempt, node FROM {schema}.deliveries", connection);
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            rows.Add((reader.GetInt64(0), reader.GetInt32(1), reader.GetInt32(2), reader.GetInt32(3)));
        }

        return rows;
    }
}

/// <summary>Every test that uses the server; never in parallel with other tests (one of them starves the ThreadPool).</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class PostgresCollection : ICollectionFixture<PostgresFixture>
{
    public const string Name = "postgres";
}
