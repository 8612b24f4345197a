using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Interleavings of hand-off transactions (BEGIN; an outcome completing a running item; the hand-off claim for its key;
/// ... COMMIT or ROLLBACK) with per-key claims in explicit transactions, on two or three connections, in random orders:
/// after every commit and rollback no key has more than M running items and each key's started items are its oldest
/// (started in id order); a rolled-back hand-off leaves its item running and claims nothing.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class HandOffProperties(PostgresFixture postgres)
{
    /// <summary>A step on connection <c>Connection</c>: if idle, begin and either hand off (<c>HandOff</c>, completing the <c>Pick</c>-th running item) or claim <c>Count</c>; if in a transaction, commit (or roll back when <c>Fail</c>).</summary>
    public sealed record Move(bool HandOff, bool Fail, int Connection, int Count, int Pick)
    {
        public override string ToString() => $"c{Connection}:{(HandOff ? "handoff#" + Pick : "claim")}/{Count}{(Fail ? "!" : string.Empty)}";
    }

    public sealed record Scenario(string?[] Keys, int PerKey, int Connections, Move[] Steps)
    {
        public override string ToString() =>
            $"M={PerKey} connections={Connections} rows=[{string.Join(",", Keys.Select(k => k ?? "-"))}] steps=[{string.Join(" ", Steps.AsEnumerable())}]";
    }

    public static class Arbitraries
    {
        private static readonly Gen<Move> Steps =
            from handOff in Gen.Frequency((1, Gen.Constant(false)), (2, Gen.Constant(true)))
            from fail in Gen.Frequency((4, Gen.Constant(false)), (1, Gen.Constant(true)))
            from connection in Gen.Choose(0, 2)
            from count in Gen.Choose(1, 3)
            from pick in Gen.Choose(0, 20)
            select new Move(handOff, fail, connection, count, pick);

        public static Arbitrary<Scenario> Scenarios() =>
            (from keys in Gen.Choose(3, 14).SelectMany(n => Gen.ArrayOf(Gen.Frequency((1, Gen.Constant<string?>(null)), (5, Gen.Elements<string?>("a", "b"))), n))
             from perKey in Gen.Choose(2, 3)
             from connections in Gen.Choose(2, 3)
             from steps in Gen.Choose(6, 30).SelectMany(n => Gen.ArrayOf(Steps, n))
             select new Scenario(keys, perKey, connections, steps)).ToArbitrary();
    }

    [Property(MaxTest = 50, Arbitrary = [typeof(Arbitraries)])]
    public async Task InterleavedHandOffsAndClaims_NeverMoreThanMPerKey_AndStartKeysInIdOrder(Scenario scenario)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var m = scenario.PerKey;
        await claim.InsertAsync([.. scenario.Keys.Select(k => (k, 0, 0))]);
        await claim.ClaimAsync(scenario.Keys.Length, m); // the first claim: each key's M oldest run
        var connections = new NpgsqlConnection[scenario.Connections];
        var open = new (NpgsqlTransaction Transaction, long? Finished, long[] Handed)?[scenario.Connections];
        try
        {
            for (var i = 0; i < connections.Length; i++)
            {
                connections[i] = await claim.OpenAsync();
            }

            foreach (var step in scenario.Steps)
            {
                var c = step.Connection % connections.Length;
                if (open[c] is not { } current)
                {
                    var transaction = await connections[c].BeginTransactionAsync();
                    if (step.HandOff)
                    {
                        var (finished, key) = await CompleteOneAsync(claim, connections[c], transaction, step.Pick);
                        var handed = key is null ? [] : await HandOffAsync(claim, connections[c], transaction, key, step.Count, m);
                        open[c] = (transaction, finished, handed);
                    }
                    else
                    {
                        await claim.ClaimAsync(step.Count, m, connections[c], transaction);
                        open[c] = (transaction, null, []);
                    }

                    continue;
                }

                open[c] = null;
                if (step.Fail)
                {
                    await current.Transaction.RollbackAsync();
                    var running = await claim.RunningAsync();
                    Assert.True(current.Finished is not { } f || running.Contains(f), $"after the rollback of {step}: the finished item {current.Finished} is not running.");
                    Assert.True(!current.Handed.Any(running.Contains), $"after the rollback of {step}: an item it handed off runs.");
                }
                else
                {
                    await current.Transaction.CommitAsync();
                }

                await current.Transaction.DisposeAsync();
                await CheckAsync(claim, m, $"after {step}");
            }

            for (var c = 0; c < connections.Length; c++)
            {
                if (open[c] is { } left)
                {
                    open[c] = null;
                    await left.Transaction.CommitAsync();
                    await left.Transaction.DisposeAsync();
                    await CheckAsync(claim, m, $"after the final commit of connection {c}");
                }
            }
        }
        finally
        {
            foreach (var connection in connections)
            {
                if (connection is not null)
                {
                    await connection.DisposeAsync();
                }
            }
        }
    }

    /// <summary>The outcome: completes one committed running item no one else holds (the <paramref name="pick"/>-th, wrapping); its id and key.</summary>
    private static async Task<(long? Id, string? Key)> CompleteOneAsync(KeyedClaim claim, NpgsqlConnection connection, NpgsqlTransaction transaction, int pick)
    {
        await using var command = new NpgsqlCommand($"""
            WITH candidates AS (
                SELECT id FROM {claim.Items} WHERE state = 1 ORDER BY id FOR UPDATE SKIP LOCKED),
            picked AS (
                SELECT id FROM candidates ORDER BY id OFFSET ({pick} % greatest((SELECT count(*) FROM candidates), 1)) LIMIT 1)
            UPDATE {claim.Items} SET state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL WHERE id IN (SELECT id FROM picked)
            RETURNING id, ordering_key
            """, connection, transaction);
        await using var reader = await command.ExecuteReaderAsync();
        return await reader.ReadAsync() ? (reader.GetInt64(0), reader.IsDBNull(1) ? null : reader.GetString(1)) : (null, null);
    }

    /// <summary>The hand-off claim (<see cref="KeyedClaimSql.HandOff"/>) for one key in the caller's transaction; the ids it claimed.</summary>
    private static async Task<long[]> HandOffAsync(KeyedClaim claim, NpgsqlConnection connection, NpgsqlTransaction transaction, string key, int count, int perKey)
    {
        await using var command = new NpgsqlCommand(new KeyedClaimSql(claim.Sql).HandOff, connection, transaction)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = KeyedClaim.Queue },
                new NpgsqlParameter<int> { TypedValue = count },
                new NpgsqlParameter<string> { TypedValue = "test" },
                new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromHours(1) },
                new NpgsqlParameter<int> { TypedValue = perKey },
                new NpgsqlParameter<string[]> { TypedValue = [key] },
                new NpgsqlParameter<int> { TypedValue = perKey },
                new NpgsqlParameter<string[]> { TypedValue = [] }, // no reserves: see KeyReserveProperties
            },
        };
        var ids = new List<long>();
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            Assert.Equal(key, reader.GetString(8));
            ids.Add(reader.GetInt64(0));
        }

        return [.. ids];
    }

    private static async Task CheckAsync(KeyedClaim claim, int m, string when)
    {
        await using var connection = await claim.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT id, ordering_key, state, attempts FROM {claim.Items} ORDER BY id", connection);
        var rows = new List<(long Id, string? Key, short State, int Attempts)>();
        await using (var reader = await command.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                rows.Add((reader.GetInt64(0), reader.IsDBNull(1) ? null : reader.GetString(1), reader.GetInt16(2), reader.GetInt32(3)));
            }
        }

        foreach (var key in rows.Where(r => r.Key is not null).Select(r => r.Key).Distinct())
        {
            var running = rows.Count(r => r.Key == key && r.State == 1);
            Assert.True(running <= m, $"{when}: key {key} has {running} running, M = {m}.");
            var started = rows.Where(r => r.Key == key && r.Attempts > 0).Select(r => r.Id).ToList();
            var waitingOlder = rows.Where(r => r.Key == key && r.Attempts == 0 && started.Count > 0 && r.Id < started.Max()).Select(r => r.Id).ToList();
            Assert.True(waitingOlder.Count == 0, $"{when}: key {key} started {string.Join(",", started)} before {string.Join(",", waitingOlder)}.");
        }
    }
}
