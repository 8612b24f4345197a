using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The limited claim statement against the real database, on tables written directly: whatever the rows (keys, states,
/// priorities), limits and idle workers, one claim takes only ready items, leaves at most <c>max_running</c> running
/// and at most M running per key (when it takes any), never takes an item of a key while an older ready item of the key
/// stays, and takes as many as the limits and the idle workers allow.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterLimitClaimProperties(PostgresFixture postgres)
{
    /// <summary>One row: its key (null: none), state (0 ready, 1 running, 5 scheduled, 2 completed) and priority.</summary>
    public sealed record Row(string? Key, short State, short Priority)
    {
        public override string ToString() => $"{Key ?? "-"}:{State}{(Priority != 0 ? "p" + Priority : string.Empty)}";
    }

    public sealed record Scenario(Row[] Rows, int? MaxRunning, int PerKey, int Idle)
    {
        public override string ToString() => $"max={MaxRunning?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "-"} perKey={PerKey} idle={Idle} rows=[{string.Join(",", Rows.AsEnumerable())}]";
    }

    public static class Arbitraries
    {
        private static readonly Gen<Row> Rows =
            from key in Gen.Elements<string?>(null, "a", "b", "c")
            from state in Gen.Frequency((4, Gen.Constant<short>(0)), (2, Gen.Constant<short>(1)), (1, Gen.Constant<short>(5)), (1, Gen.Constant<short>(2)))
            from priority in Gen.Frequency((2, Gen.Constant<short>(0)), (1, Gen.Choose(1, 3).Select(p => (short)p)))
            select new Row(key, state, priority);

        public static Arbitrary<Scenario> Scenarios() =>
            (from rows in Gen.Choose(1, 14).SelectMany(n => Gen.ArrayOf(Rows, n))
             from max in Gen.Frequency((1, Gen.Constant<int?>(null)), (3, Gen.Choose(1, 6).Select(m => (int?)m)))
             from perKey in Gen.Choose(1, 3)
             from idle in Gen.Choose(1, 6)
             select new Scenario(rows, max, perKey, idle)).ToArbitrary();
    }

    /// <summary>Run 40 times: each case is a schema, one insert, one claim.</summary>
    [Property(MaxTest = 40, Arbitrary = [typeof(Arbitraries)])]
    public async Task OneLimitedClaim_KeepsEveryLimit_TakesKeysInOrder_AndTakesAllItMay(Scenario scenario)
    {
        var schema = await postgres.NewSchemaAsync();
        var sql = new StorageSql(schema);
        await using (var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString))
        {
            await SchemaMigrator.MigrateAsync(dataSource, sql, CancellationToken.None);
        }

        // One statement, so every row has the same run_at: the claim order is priority, then id.
        var values = string.Join(", ", scenario.Rows.Select(r =>
            $"('{ClusterLimitSql.Queue}', '{{}}', {(r.Key is null ? "NULL" : $"'{r.Key}'")}, {r.State}, {r.Priority}, {(r.State == 5 ? "now() + interval '1 hour'" : "now()")}, "
            + $"{(r.State == 1 ? "'other', now() + interval '1 hour'" : "NULL, NULL")})"));
        await postgres.ExecuteAsync($"INSERT INTO {sql.Items} (queue, payload, ordering_key, state, priority, run_at, lease_owner, lease_until) VALUES {values}");
        // Forces the limited claim even without any other limit (M = 1 alone is no limit).
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: scenario.MaxRunning ?? 1000, perKey: scenario.PerKey);

        var claimed = (await ClaimLimitedAsync(sql, scenario.Idle)).ToHashSet();
        var rows = scenario.Rows.Select((r, i) => (Id: (long)i + 1, r.Key, r.State, r.Priority)).ToArray();
        long firstId = await postgres.ScalarAsync<long>($"SELECT min(id) FROM {sql.Items}");
        rows = [.. rows.Select(r => r with { Id = r.Id - 1 + firstId })];

        // Only ready items.
        Assert.All(claimed, id => Assert.Equal(0, rows.Single(r => r.Id == id).State));
        var runningBefore = rows.Count(r => r.State == 1);
        var runningAfter = runningBefore + claimed.Count;
        if (claimed.Count > 0)
        {
            Assert.True(runningAfter <= (scenario.MaxRunning ?? 1000), $"{runningAfter} running after the claim.");
            foreach (var key in rows.Where(r => claimed.Contains(r.Id) && r.Key is not null).Select(r => r.Key).Distinct())
            {
                var ofKey = rows.Count(r => r.Key == key && (r.State == 1 || claimed.Contains(r.Id)));
                Assert.True(ofKey <= scenario.PerKey, $"{ofKey} of key {key} running after the claim.");
            }
        }

        // Within a key, never a newer item while an older ready one stays behind.
        foreach (var c in rows.Where(r => claimed.Contains(r.Id) && r.Key is not null))
        {
            Assert.DoesNotContain(rows, o => o.Key == c.Key && o.Id < c.Id && o.State == 0 && !claimed.Contains(o.Id));
        }

        // As many as allowed: the eligible items (the per-key rule on the rows as they were), within the idle workers
        // and the global room.
        var eligible = rows.Count(c => c.State == 0 && (c.Key is null
            || rows.Count(o => o.Key == c.Key && o.Id < c.Id && o.State is 0 or 1 or 5) + rows.Count(n => n.Key == c.Key && n.Id > c.Id && n.State == 1) < scenario.PerKey));
        var room = Math.Max((scenario.MaxRunning ?? 1000) - runningBefore, 0);
        Assert.Equal(Math.Min(Math.Min(eligible, scenario.Idle), room), claimed.Count);
    }

    private async Task<List<long>> ClaimLimitedAsync(StorageSql sql, int count)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var transaction = await connection.BeginTransactionAsync();
        await using (var lockSettings = new NpgsqlCommand(sql.LockSettings, connection, transaction) { Parameters = { new() { Value = ClusterLimitSql.Queue } } })
        {
            Assert.True(await lockSettings.ExecuteScalarAsync() is true);
        }

        var claimed = new List<long>();
        await using (var command = new NpgsqlCommand(sql.ClaimLimited, connection, transaction)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = count }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) } },
        })
        await using (var reader = await command.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                if (!reader.IsDBNull(0))
                {
                    claimed.Add(reader.GetInt64(0));
                }
            }
        }

        await transaction.CommitAsync();
        return claimed;
    }
}
