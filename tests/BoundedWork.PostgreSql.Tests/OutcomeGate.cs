using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Makes the database hold back the outcome writes of chosen nodes: while the gate is closed, a trigger makes every
/// statement that finishes a claim of theirs (running to completed, retry, dead letter or released) wait for an
/// advisory lock this gate's own connection holds. Claims and every other node go on. A held write keeps the rows it
/// reached locked, so the node's heartbeat waits behind it too: give the gated node a lease that outlasts the test.
/// Open (or dispose) the gate and the waiting writes proceed.
/// </summary>
public sealed class OutcomeGate : IAsyncDisposable
{
    /// <summary>A writer held at the gate: the outcome statement (its text begins with <c>/* BoundedWork outcomes */</c>) waiting for the advisory lock.</summary>
    private const string HeldWriters = "FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%BoundedWork outcomes%'";

    private readonly PostgresFixture _postgres;
    private readonly string _schema;
    private NpgsqlConnection? _lock;

    private OutcomeGate(PostgresFixture postgres, string schema, NpgsqlConnection connection)
    {
        _postgres = postgres;
        _schema = schema;
        _lock = connection;
    }

    /// <summary>Closes a gate for the nodes whose lease owner matches <paramref name="ownerPattern"/> (a LIKE pattern), on the queue's items table in <paramref name="schema"/>.</summary>
    public static async Task<OutcomeGate> CloseAsync(PostgresFixture postgres, string schema, string ownerPattern)
    {
        // Not pooled: closing the connection ends the session, and the advisory lock with it.
        var connection = new NpgsqlConnection(postgres.ConnectionString + ";Pooling=false");
        await connection.OpenAsync();
        await using (var close = new NpgsqlCommand($"SELECT pg_advisory_lock(hashtext('{schema}'))", connection))
        {
            await close.ExecuteNonQueryAsync();
        }

        await postgres.ExecuteAsync($$"""
            CREATE TABLE IF NOT EXISTS {{schema}}.lagging_owners (pattern text NOT NULL);
            CREATE OR REPLACE FUNCTION {{schema}}.hold_outcomes() RETURNS trigger LANGUAGE plpgsql AS $fn$
            BEGIN
                IF EXISTS (SELECT 1 FROM {{schema}}.lagging_owners WHERE OLD.lease_owner LIKE pattern) THEN
                    PERFORM pg_advisory_xact_lock_shared(hashtext(TG_TABLE_SCHEMA));
                END IF;
                RETURN NEW;
            END $fn$;
            DROP TRIGGER IF EXISTS hold_outcomes ON {{schema}}.items;
            CREATE TRIGGER hold_outcomes BEFORE UPDATE ON {{schema}}.items FOR EACH ROW
                WHEN (OLD.state = 1 AND NEW.state <> 1) EXECUTE FUNCTION {{schema}}.hold_outcomes();
            """);
        await using (var owner = new NpgsqlCommand($"INSERT INTO {schema}.lagging_owners VALUES ($1)", connection))
        {
            owner.Parameters.Add(new() { Value = ownerPattern });
            await owner.ExecuteNonQueryAsync();
        }

        return new OutcomeGate(postgres, schema, connection);
    }

    /// <summary>Waits until an outcome write is held at the gate.</summary>
    public Task WaitUntilHoldingAsync() =>
        DurableQueueTests.WaitAsync(() => _postgres.ScalarAsync<long>("SELECT count(*) " + HeldWriters).Result > 0, $"an outcome write of schema {_schema} is held at the gate");

    /// <summary>
    /// Ends the sessions of the writers held at the gate, as the server does for a client that died: their writes roll
    /// back. Returns once those sessions have exited (the timeout argument makes the server wait for that), so opening
    /// the gate afterwards cannot let a held write through.
    /// </summary>
    public async Task TerminateHeldWritersAsync()
    {
        var ended = await _postgres.ScalarAsync<bool>("SELECT coalesce(bool_and(pg_terminate_backend(pid, 60000)), true) " + HeldWriters);
        Assert.True(ended, "A held writer's session did not exit.");
    }

    /// <summary>Opens the gate: held writes proceed, new ones pass.</summary>
    public async Task OpenAsync()
    {
        if (Interlocked.Exchange(ref _lock, null) is { } connection)
        {
            await connection.DisposeAsync();
        }
    }

    public async ValueTask DisposeAsync() => await OpenAsync();
}
