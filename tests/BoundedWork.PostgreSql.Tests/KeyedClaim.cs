using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The per-key claim statement (<see cref="KeyedClaimSql.ClaimPerKey"/>) run directly against the test server: a schema
/// migrated by the library, rows written with plain SQL, claims run on any connection (in the caller's transaction when
/// it has one).
/// </summary>
internal sealed class KeyedClaim(PostgresFixture postgres, string schema)
{
    public const string Queue = "keyed";

    public StorageSql Sql { get; } = new(schema);

    public string Items => Sql.Items;

    public static async Task<KeyedClaim> CreateAsync(PostgresFixture postgres)
    {
        var claim = new KeyedClaim(postgres, await postgres.NewSchemaAsync());
        await using var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString);
        await SchemaMigrator.MigrateAsync(dataSource, claim.Sql, CancellationToken.None);
        return claim;
    }

    /// <summary>Inserts items in one statement (so in id order, with one run_at): key (null: none), priority, state (0 ready, 5 scheduled an hour ahead, 3 dead).</summary>
    public async Task<long[]> InsertAsync(params (string? Key, int Priority, int State)[] rows)
    {
        var values = string.Join(", ", rows.Select((r, n) =>
            $"('{Queue}', '{{\"n\": {n}}}', {(r.Key is null ? "NULL" : $"'{r.Key}'")}, {r.Priority}, {r.State}, "
            + $"{(r.State == 5 ? "now() + interval '1 hour'" : "now()")}, {(r.State == 3 ? "now()" : "NULL")}, {(r.State == 3 ? "1" : "0")})"));
        return await postgres.ScalarAsync<long[]>($"""
            WITH inserted AS (
                INSERT INTO {Items} (queue, payload, ordering_key, priority, state, run_at, finished_at, attempts)
                VALUES {values} RETURNING id)
            SELECT array_agg(id ORDER BY id) FROM inserted
            """);
    }

    /// <summary>One claim: its claimed ids (in the order returned) and its summary row (returned last).</summary>
    public async Task<Result> ClaimAsync(int count, int perKey, NpgsqlConnection? connection = null, NpgsqlTransaction? transaction = null, string node = "test")
    {
        var own = connection is null;
        connection ??= await OpenAsync();
        try
        {
            long version;
            await using (var read = new NpgsqlCommand($"SELECT coalesce((SELECT version FROM {Sql.QueueSettings} WHERE queue = '{Queue}'), 0)", connection, transaction))
            {
                version = (long)(await read.ExecuteScalarAsync())!; // the settings version a node would have read M under
            }

            await using var command = new NpgsqlCommand(new KeyedClaimSql(Sql).ClaimPerKey, connection, transaction)
            {
                Parameters =
                {
                    new NpgsqlParameter<string> { TypedValue = Queue },
                    new NpgsqlParameter<int> { TypedValue = count },
                    new NpgsqlParameter<string> { TypedValue = node },
                    new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromHours(1) },
                    new NpgsqlParameter<int> { TypedValue = perKey },
                    new NpgsqlParameter<long> { TypedValue = version },
                },
            };
            var ids = new List<long>();
            Result? last = null;
            await using var reader = await command.ExecuteReaderAsync();
            while (await reader.ReadAsync())
            {
                if (reader.GetBoolean(reader.GetOrdinal("summary")))
                {
                    var nextDue = reader.GetOrdinal("next_due");
                    last = new Result(ids, reader.GetInt32(reader.GetOrdinal("promoted")), reader.IsDBNull(nextDue) ? null : reader.GetDouble(nextDue),
                        reader.GetInt64(reader.GetOrdinal("held_back")), reader.GetDouble(reader.GetOrdinal("oldest_wait")));
                }
                else
                {
                    Assert.Null(last);
                    ids.Add(reader.GetInt64(0));
                }
            }

            return last ?? throw new InvalidOperationException("No summary row.");
        }
        finally
        {
            if (own)
            {
                await connection.DisposeAsync();
            }
        }
    }

    public async Task<NpgsqlConnection> OpenAsync()
    {
        var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        // The session settings of the queue's own connections (index scans, generic plans, no JIT).
        await using var command = new NpgsqlCommand(PostgreSqlWorkQueue<object>.SessionSettings, connection);
        await command.ExecuteNonQueryAsync();
        return connection;
    }

    public Task CompleteAsync(params long[] ids) =>
        postgres.ExecuteAsync($"UPDATE {Items} SET state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL WHERE id IN ({string.Join(", ", ids)})");

    /// <summary>Requeues dead letters of the queue with the library's statement (null ids: all).</summary>
    public async Task<long> RequeueAsync(long[]? ids = null, NpgsqlConnection? on = null)
    {
        await using var own = on is null ? await OpenAsync() : null;
        var connection = on ?? own!;
        await using var command = new NpgsqlCommand(Sql.RequeueDeadLetters, connection)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = Queue },
                new NpgsqlParameter { Value = (object?)ids ?? DBNull.Value, NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.Array | NpgsqlTypes.NpgsqlDbType.Bigint },
                new NpgsqlParameter { Value = DBNull.Value, NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.TimestampTz },
                new NpgsqlParameter { Value = DBNull.Value, NpgsqlDbType = NpgsqlTypes.NpgsqlDbType.TimestampTz },
                new NpgsqlParameter<string> { TypedValue = Sql.NotifyChannel },
            },
        };
        await using var reader = await command.ExecuteReaderAsync();
        await reader.ReadAsync();
        return reader.GetInt64(0);
    }

    /// <summary>The most running items any one key has now.</summary>
    public Task<long> MaxRunningPerKeyAsync() => postgres.ScalarAsync<long>(
        $"SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM {Items} WHERE state = 1 AND ordering_key IS NOT NULL GROUP BY ordering_key) k");

    public Task<long[]> RunningAsync() => postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM {Items} WHERE state = 1");

    public sealed record Result(List<long> Ids, int Promoted, double? NextDue, long HeldBack, double OldestWait);
}
