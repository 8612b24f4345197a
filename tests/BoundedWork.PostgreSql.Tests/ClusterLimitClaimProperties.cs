using BoundedWork.PostgreSql.Internal;
using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The keyed claim statement (<c>max_running_per_key</c> M above one, or the plain claim at M = 1) against the real
/// database, on tables written directly: whatever the rows (keys, states, priorities), M and the free permits, one
/// claim takes only ready items, leaves at most M running per key (when it takes any), never takes an item of a key
/// while an older ready item of the key stays, and takes as many as the rule and the permits allow.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterLimitClaimProperties(PostgresFixture postgres)
{
    /// <summary>One row: its key (null: none), state (0 ready, 1 running, 5 scheduled, 2 completed) and priority.</summary>
    public sealed record Row(string? Key, short State, short Priority)
    {
        public override string ToString() => $"{Key ?? "-"}:{State}{(Priority != 0 ? "p" + Priority : string.Empty)}";
    }

    public sealed record Scenario(Row[] Rows, int PerKey, int Idle)
    {
        public override string ToString() => $"perKey={PerKey} permits={Idle} rows=[{string.Join(",", Rows.AsEnumerable())}]";
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
             from perKey in Gen.Choose(1, 3)
             from idle in Gen.Choose(1, 6)
             select new Scenario(rows, perKey, idle)).ToArbitrary();
    }

    /// <summary>Run 40 times: each case is a schema, one insert, one claim.</summary>
    [Property(MaxTest = 40, Arbitrary = [typeof(Arbitraries)])]
    public async Task OneKeyedClaim_KeepsThePerKeyLimit_TakesKeysInOrder_AndTakesAllItMay(Scenario scenario)
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
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: scenario.PerKey);

        var claimed = (await ClaimAsync(sql, scenario.Idle, scenario.PerKey)).ToHashSet();
        var rows = scenario.Rows.Select((r, i) => (Id: (long)i + 1, r.Key, r.State, r.Priority)).ToArray();
        long firstId = await postgres.ScalarAsync<long>($"SELECT min(id) FROM {sql.Items}");
        rows = [.. rows.Select(r => r with { Id = r.Id - 1 + firstId })];

        // Only ready items.
        Assert.All(claimed, id => Assert.Equal(0, rows.Single(r => r.Id == id).State));
        if (claimed.Count > 0)
        {
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

        // As many as allowed: the eligible items (the per-key rule on the rows as they were), within the permits.
        var eligible = rows.Count(c => c.State == 0 && (c.Key is null
            || rows.Count(o => o.Key == c.Key && o.Id < c.Id && o.State is 0 or 1 or 5) + rows.Count(n => n.Key == c.Key && n.Id > c.Id && n.State == 1) < scenario.PerKey));
        Assert.Equal(Math.Min(eligible, scenario.Idle), claimed.Count);
    }

    private async Task<List<long>> ClaimAsync(StorageSql sql, int count, int perKey)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        var claimed = new List<long>();
        await using var command = new NpgsqlCommand(perKey > 1 ? new KeyedClaimSql(sql).ClaimPerKey : sql.Claim, connection)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = count }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) } },
        };
        if (perKey > 1)
        {
            command.Parameters.Add(new() { Value = perKey });
            command.Parameters.Add(new() { Value = 1L }); // the version SetLimitsAsync wrote
        }
        else
        {
            command.Parameters.Add(new() { Value = 1L }); // the version SetLimitsAsync wrote
            command.Parameters.Add(new() { Value = 0 });
        }

        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            if (!reader.GetBoolean(reader.GetOrdinal("summary")))
            {
                claimed.Add(reader.GetInt64(0));
            }
        }

        return claimed;
    }
}
