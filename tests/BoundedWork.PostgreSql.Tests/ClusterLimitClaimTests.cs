using BoundedWork.PostgreSql.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The rules of the limited claim statement, one at a time, on rows written directly: the claim transaction runs as a
/// node runs it (<see cref="StorageSql.LockSettings"/>, then <see cref="StorageSql.ClaimLimited"/>), with no node.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterLimitClaimTests(PostgresFixture postgres)
{
    [Fact]
    public async Task MaxRunning_ClaimsOnlyTheRoomLeft_TheRestWaitForAPermit()
    {
        var (sql, schema) = await NewStoreAsync();
        await InsertAsync(sql, null, StorageSql.Running);
        await InsertAsync(sql, null, StorageSql.Running);
        var ready = new List<long>();
        for (var i = 0; i < 5; i++)
        {
            ready.Add(await InsertAsync(sql, null));
        }

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 3);

        var first = await ClaimAsync(sql, 4);
        Assert.Equal(new[] { ready[0] }, first.Claimed);
        Assert.Equal(3, first.Waiting); // the node had four idle workers, one permit was left
        Assert.Equal("max_running", first.Bound);

        var second = await ClaimAsync(sql, 4);
        Assert.Empty(second.Claimed);
        Assert.Equal(4, second.Waiting);
    }

    [Fact]
    public async Task MaxRunning_AnExpiredLeaseStillCounts_UntilItIsReaped()
    {
        var (sql, schema) = await NewStoreAsync();
        await postgres.ExecuteAsync($"INSERT INTO {sql.Items} (queue, payload, state, lease_owner, lease_until) VALUES ('notices', '{{\"Number\": 0}}', 1, 'dead', now() - interval '1 minute')");
        await InsertAsync(sql, null);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1);

        Assert.Empty((await ClaimAsync(sql, 2)).Claimed);
    }

    [Fact]
    public async Task MaxRunningPerKey_TakesAKeysItemsInEnqueueOrder_UpToM_WhateverTheirPriorities()
    {
        var (sql, schema) = await NewStoreAsync();
        var a = await InsertAsync(sql, "k", priority: 0);
        var b = await InsertAsync(sql, "k", priority: 5);
        var c = await InsertAsync(sql, "k", priority: 9);
        var d = await InsertAsync(sql, "k", priority: 9);

        // One global permit: the key's oldest item takes it, not its most urgent.
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 1, perKey: 2);
        Assert.Equal(new[] { a }, (await ClaimAsync(sql, 4)).Claimed);

        // No global limit: the next one of the key; its third waits behind two unfinished elders.
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 2);
        Assert.Equal(new[] { b }, (await ClaimAsync(sql, 4)).Claimed);
        Assert.Empty((await ClaimAsync(sql, 4)).Claimed);

        await postgres.ExecuteAsync($"UPDATE {sql.Items} SET state = 2, finished_at = now() WHERE id = {a}");
        Assert.Equal(new[] { c }, (await ClaimAsync(sql, 4)).Claimed);
        await postgres.ExecuteAsync($"UPDATE {sql.Items} SET state = 2, finished_at = now() WHERE id IN ({b}, {c})");
        Assert.Equal(new[] { d }, (await ClaimAsync(sql, 4)).Claimed);
    }

    [Fact]
    public async Task MaxRunningPerKey_OneClaimTakesUpToMOfAKey_OldestFirst()
    {
        var (sql, schema) = await NewStoreAsync();
        var ids = new List<long>();
        for (var i = 0; i < 5; i++)
        {
            ids.Add(await InsertAsync(sql, "k", priority: (short)i)); // the newest the most urgent
        }

        var other = await InsertAsync(sql, "j");
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 3);

        Assert.Equal(new[] { ids[0], ids[1], ids[2], other }, (await ClaimAsync(sql, 10)).Claimed.Order());
    }

    [Fact]
    public async Task MaxRunningPerKey_ARequeuedOlderItemWaits_WhileMNewerItemsOfItsKeyRun()
    {
        var (sql, schema) = await NewStoreAsync();
        var requeued = await InsertAsync(sql, "k");
        await InsertAsync(sql, "k", StorageSql.Running);
        await InsertAsync(sql, "k", StorageSql.Running);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 2);

        Assert.Empty((await ClaimAsync(sql, 4)).Claimed);

        await postgres.ExecuteAsync($"UPDATE {sql.Items} SET state = 2, finished_at = now() WHERE id = (SELECT max(id) FROM {sql.Items})");
        Assert.Equal(new[] { requeued }, (await ClaimAsync(sql, 4)).Claimed);
    }

    [Fact]
    public async Task MaxRunningPerKeyOne_UnderAGlobalLimit_IsTheOrderingRuleOfEveryQueue()
    {
        var (sql, schema) = await NewStoreAsync();
        var a = await InsertAsync(sql, "k");
        await InsertAsync(sql, "k");
        var x = await InsertAsync(sql, null);
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 10);

        Assert.Equal(new[] { a, x }, (await ClaimAsync(sql, 10)).Claimed.Order());
        Assert.Empty((await ClaimAsync(sql, 10)).Claimed);
    }

    [Fact]
    public async Task StartsPerSecond_AFullBucketGivesTheBurst_AnEmptyOneNothing_AndTheTimeToItsNextToken()
    {
        var (sql, schema) = await NewStoreAsync();
        for (var i = 0; i < 10; i++)
        {
            await InsertAsync(sql, null);
        }

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 2, burst: 3);

        // Untouched for an hour: the bucket holds its burst, no more.
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 0, tokens_at = now() - interval '1 hour'");
        var full = await ClaimAsync(sql, 10);
        Assert.Equal(3, full.Claimed.Length);
        Assert.Equal("starts_per_second", full.Bound);
        Assert.Equal(0, await postgres.ScalarAsync<double>($"SELECT tokens FROM {sql.QueueSettings}"));

        // Empty, and its clock ahead of this claim's (it never refills backwards): nothing, and the next token in 1/2 s.
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 0, tokens_at = now() + interval '1 hour'");
        var empty = await ClaimAsync(sql, 10);
        Assert.Empty(empty.Claimed);
        Assert.Equal(7, empty.Waiting);
        Assert.Equal(0.5, empty.NextDue!.Value, 3);

        // A node with no idle worker spends nothing.
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 2.5, tokens_at = now() + interval '1 hour'");
        Assert.Single((await ClaimAsync(sql, 1)).Claimed);
        Assert.Equal(1.5, await postgres.ScalarAsync<double>($"SELECT tokens FROM {sql.QueueSettings}"), 6);
    }

    [Fact]
    public async Task StartBurstLowered_TheClaimSpendsAtMostTheNewBurst_AndStoresNoMore()
    {
        var (sql, schema) = await NewStoreAsync();
        for (var i = 0; i < 10; i++)
        {
            await InsertAsync(sql, null);
        }

        // A bucket filled under a burst of 8, then the burst lowered to 3; the bucket's clock is ahead (no refill).
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 1, burst: 8);
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 8, tokens_at = now() + interval '1 hour'");
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 1, burst: 3);

        Assert.Equal(3, (await ClaimAsync(sql, 10)).Claimed.Length);
        Assert.Equal(0, await postgres.ScalarAsync<double>($"SELECT tokens FROM {sql.QueueSettings}"));

        // A node with one idle worker: it spends one token of the (clamped) three, and two stay stored.
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 1, burst: 8);
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 8, tokens_at = now() + interval '1 hour'");
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, startsPerSecond: 1, burst: 3);
        Assert.Single((await ClaimAsync(sql, 1)).Claimed);
        Assert.Equal(2, await postgres.ScalarAsync<double>($"SELECT tokens FROM {sql.QueueSettings}"), 6);
    }

    [Theory]
    [InlineData(3, null, 3.0)] // the burst lowered
    [InlineData(null, 2.0, 2.0)] // no burst set: its default, ceil(rate), lowered with the rate
    public async Task StartBurstLowered_ThroughTheFleetSettings_TheStoredTokensAreClampedAtOnce_BeforeAnyClaim(int? burst, double? rate, double expected)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: o => o.Consume = false);
        var cluster = node.Host.Services.GetServices<IWorkQueueCluster>().Single();
        await cluster.UpdateSettingsAsync(s => s with { StartsPerSecond = 8, StartBurst = null }, "operator");
        var sql = new StorageSql(schema);
        await postgres.ExecuteAsync($"UPDATE {sql.QueueSettings} SET tokens = 8, tokens_at = now()");

        await cluster.UpdateSettingsAsync(s => s with { StartsPerSecond = rate ?? s.StartsPerSecond, StartBurst = burst }, "operator");

        Assert.Equal(expected, await postgres.ScalarAsync<double>($"SELECT tokens FROM {sql.QueueSettings}"), 6);
    }

    [Fact]
    public async Task SingleStatementClaim_ClaimsNothingForALimitedQueue_AndSaysSo_LockSettingsSaysWhenTheLimitsAreGone()
    {
        var (sql, schema) = await NewStoreAsync();
        await InsertAsync(sql, null);
        await InsertAsync(sql, null);

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 5);
        var limited = await UnlimitedClaimAsync(sql);
        Assert.Equal((0, true), limited);

        await ClusterLimitSql.SetLimitsAsync(postgres, schema);
        Assert.False(await LockSettingsAsync(sql));
        Assert.Equal((2, false), await UnlimitedClaimAsync(sql));
    }

    private async Task<(StorageSql Sql, string Schema)> NewStoreAsync()
    {
        var schema = await postgres.NewSchemaAsync();
        var sql = new StorageSql(schema);
        await using var dataSource = NpgsqlDataSource.Create(postgres.ConnectionString);
        await SchemaMigrator.MigrateAsync(dataSource, sql, CancellationToken.None);
        return (sql, schema);
    }

    private Task<long> InsertAsync(StorageSql sql, string? key, short state = StorageSql.Ready, short priority = 0) =>
        postgres.ScalarAsync<long>($"""
            INSERT INTO {sql.Items} (queue, payload, ordering_key, state, priority, attempts, lease_owner, lease_until)
            VALUES ('{ClusterLimitSql.Queue}', '{"{"}"Number": 0{"}"}', {(key is null ? "NULL" : $"'{key}'")}, {state}, {priority},
                    {(state == StorageSql.Running ? 1 : 0)}, {(state == StorageSql.Running ? "'other'" : "NULL")},
                    {(state == StorageSql.Running ? "now() + interval '1 hour'" : "NULL")})
            RETURNING id
            """);

    private async Task<bool> LockSettingsAsync(StorageSql sql)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql.LockSettings, connection) { Parameters = { new() { Value = ClusterLimitSql.Queue } } };
        return await command.ExecuteScalarAsync() is true;
    }

    private async Task<(int Claimed, bool Limited)> UnlimitedClaimAsync(StorageSql sql)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql.Claim, connection)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = 10 }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) } },
        };
        await using var reader = await command.ExecuteReaderAsync();
        var (claimed, limited) = (0, false);
        while (await reader.ReadAsync())
        {
            if (reader.IsDBNull(0))
            {
                limited = reader.GetBoolean(9);
            }
            else
            {
                claimed++;
            }
        }

        return (claimed, limited);
    }

    private async Task<(long[] Claimed, long Waiting, string? Bound, double? NextDue)> ClaimAsync(StorageSql sql, int count)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var transaction = await connection.BeginTransactionAsync();
        await using (var lockSettings = new NpgsqlCommand(sql.LockSettings, connection, transaction) { Parameters = { new() { Value = ClusterLimitSql.Queue } } })
        {
            Assert.True(await lockSettings.ExecuteScalarAsync() is true);
        }

        var claimed = new List<long>();
        (long Waiting, string? Bound, double? NextDue) last = default;
        await using (var command = new NpgsqlCommand(sql.ClaimLimited, connection, transaction)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = count }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) } },
        })
        await using (var reader = await command.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                if (reader.IsDBNull(0))
                {
                    last = (reader.GetInt64(9), reader.IsDBNull(11) ? null : reader.GetString(11), reader.IsDBNull(8) ? null : reader.GetDouble(8));
                }
                else
                {
                    claimed.Add(reader.GetInt64(0));
                }
            }
        }

        await transaction.CommitAsync();
        return ([.. claimed], last.Waiting, last.Bound, last.NextDue);
    }
}
