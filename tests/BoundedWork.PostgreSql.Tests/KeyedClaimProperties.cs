using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Interleavings of the per-key claim on two or three connections with explicit transactions (BEGIN; claim; ... COMMIT
/// in random orders), with running items completed at random in between: after every commit and every completion no key
/// has more than M running items and, within each key, the items started so far are its oldest (started in id order);
/// once every transaction has committed, each claim takes every item the rule admits (up to what it asks for), and the
/// queue drains.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedClaimProperties(PostgresFixture postgres)
{
    /// <summary>A step: on connection <c>Connection</c>, begin and claim <c>Count</c> (if idle) or commit (if in a transaction); or complete a running item.</summary>
    public sealed record Move(bool Complete, int Connection, int Count, int Pick)
    {
        public override string ToString() => Complete ? $"done#{Pick}" : $"c{Connection}:{Count}";
    }

    public sealed record Scenario((string? Key, short Priority)[] Rows, int PerKey, int Connections, Move[] Steps)
    {
        public override string ToString() =>
            $"M={PerKey} connections={Connections} rows=[{string.Join(",", Rows.Select(r => (r.Key ?? "-") + (r.Priority != 0 ? "p" + r.Priority : string.Empty)))}] steps=[{string.Join(" ", Steps.AsEnumerable())}]";
    }

    public static class Arbitraries
    {
        private static readonly Gen<(string? Key, short Priority)> Rows =
            from key in Gen.Frequency((1, Gen.Constant<string?>(null)), (4, Gen.Elements<string?>("a", "b", "c")))
            from priority in Gen.Frequency((3, Gen.Constant<short>(0)), (1, Gen.Choose(1, 2).Select(p => (short)p)))
            select (key, priority);

        private static readonly Gen<Move> Steps =
            from complete in Gen.Frequency((3, Gen.Constant(false)), (1, Gen.Constant(true)))
            from connection in Gen.Choose(0, 2)
            from count in Gen.Choose(1, 4)
            from pick in Gen.Choose(0, 20)
            select new Move(complete, connection, count, pick);

        public static Arbitrary<Scenario> Scenarios() =>
            (from rows in Gen.Choose(3, 14).SelectMany(n => Gen.ArrayOf(Rows, n))
             from perKey in Gen.Choose(1, 3)
             from connections in Gen.Choose(2, 3)
             from steps in Gen.Choose(4, 30).SelectMany(n => Gen.ArrayOf(Steps, n))
             select new Scenario(rows, perKey, connections, steps)).ToArbitrary();
    }

    [Property(MaxTest = 60, Arbitrary = [typeof(Arbitraries)])]
    public async Task InterleavedClaims_NeverMoreThanMPerKey_StartKeysInIdOrder_AndDrain(Scenario scenario)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var m = scenario.PerKey;
        await claim.InsertAsync([.. scenario.Rows.Select(r => (r.Key, (int)r.Priority, 0))]);
        var connections = new NpgsqlConnection[scenario.Connections];
        var transactions = new NpgsqlTransaction?[scenario.Connections];
        try
        {
            for (var i = 0; i < connections.Length; i++)
            {
                connections[i] = await claim.OpenAsync();
            }

            foreach (var step in scenario.Steps)
            {
                if (step.Complete)
                {
                    await CompleteOneAsync(claim, step.Pick);
                    await CheckAsync(claim, m, $"after {step}");
                    continue;
                }

                var c = step.Connection % connections.Length;
                if (transactions[c] is null)
                {
                    transactions[c] = await connections[c].BeginTransactionAsync();
                    await claim.ClaimAsync(step.Count, m, connections[c], transactions[c]);
                }
                else
                {
                    await transactions[c]!.CommitAsync();
                    await transactions[c]!.DisposeAsync();
                    transactions[c] = null;
                    await CheckAsync(claim, m, $"after the commit of {step}");
                }
            }

            for (var c = 0; c < connections.Length; c++)
            {
                if (transactions[c] is { } open)
                {
                    await open.CommitAsync();
                    await open.DisposeAsync();
                    transactions[c] = null;
                    await CheckAsync(claim, m, $"after the final commit of connection {c}");
                }
            }

            // Alone now: each claim takes exactly what the rule admits (up to 3), and the queue drains.
            for (var round = 0; round <= scenario.Rows.Length * 2; round++)
            {
                var rows = await RowsAsync(claim);
                if (rows.All(r => r.State == 2))
                {
                    return;
                }

                var eligible = rows.Count(c => c.State == 0 && (c.Key is null
                    || rows.Count(o => o.Key == c.Key && o.Id < c.Id && o.State is 0 or 1) + rows.Count(n => n.Key == c.Key && n.Id > c.Id && n.State == 1) < m));
                var taken = await claim.ClaimAsync(3, m);
                Assert.True(Math.Min(eligible, 3) == taken.Ids.Count, $"round {round}: {eligible} eligible, took {taken.Ids.Count}.");
                await CheckAsync(claim, m, $"in drain round {round}");
                await CompleteOneAsync(claim, round);
            }

            Assert.Fail("The queue did not drain.");
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

    private static async Task CheckAsync(KeyedClaim claim, int m, string when)
    {
        var rows = await RowsAsync(claim);
        foreach (var key in rows.Where(r => r.Key is not null).Select(r => r.Key).Distinct())
        {
            var running = rows.Count(r => r.Key == key && r.State == 1);
            Assert.True(running <= m, $"{when}: key {key} has {running} running, M = {m}.");
            var started = rows.Where(r => r.Key == key && r.Attempts > 0).Select(r => r.Id).ToList();
            var waitingOlder = rows.Where(r => r.Key == key && r.Attempts == 0 && started.Count > 0 && r.Id < started.Max()).Select(r => r.Id).ToList();
            Assert.True(waitingOlder.Count == 0, $"{when}: key {key} started {string.Join(",", started)} before {string.Join(",", waitingOlder)}.");
        }
    }

    /// <summary>Completes one committed running item that no open transaction holds (the <paramref name="pick"/>-th, wrapping).</summary>
    private Task CompleteOneAsync(KeyedClaim claim, int pick) => postgres.ExecuteAsync($"""
        WITH candidates AS (
            SELECT id FROM {claim.Items} WHERE state = 1 ORDER BY id FOR UPDATE SKIP LOCKED),
        picked AS (
            SELECT id FROM candidates ORDER BY id OFFSET ({pick} % greatest((SELECT count(*) FROM candidates), 1)) LIMIT 1)
        UPDATE {claim.Items} SET state = 2, finished_at = now(), lease_owner = NULL, lease_until = NULL WHERE id IN (SELECT id FROM picked)
        """);

    private static async Task<List<(long Id, string? Key, short State, int Attempts)>> RowsAsync(KeyedClaim claim)
    {
        await using var connection = await claim.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT id, ordering_key, state, attempts FROM {claim.Items} ORDER BY id", connection);
        await using var reader = await command.ExecuteReaderAsync();
        var rows = new List<(long, string?, short, int)>();
        while (await reader.ReadAsync())
        {
            rows.Add((reader.GetInt64(0), reader.IsDBNull(1) ? null : reader.GetString(1), reader.GetInt16(2), reader.GetInt32(3)));
        }

        return rows;
    }
}
