using BoundedWork.PostgreSql.Internal;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The rules of the claim statements under cluster limits, one at a time, on rows written directly, with no node: the
/// keyed claim (<see cref="KeyedClaimSql.ClaimPerKey"/>), the plain claim's settings-version check, and what a grant
/// transaction reads (<see cref="PermitGrantSql.ReadGrants"/>).
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ClusterLimitClaimTests(PostgresFixture postgres)
{
    [Fact]
    public async Task GrantRead_ARunningRowOfANodeWithoutALiveGrant_CountsAsDead_UntilItIsReaped()
    {
        var (sql, _) = await NewStoreAsync();
        var statements = new PermitGrantSql(sql);
        await postgres.ExecuteAsync($"""
            INSERT INTO {sql.Items} (queue, payload, state, lease_owner, lease_until) VALUES
                ('notices', '{"{}"}', 1, 'killed', now() - interval '1 minute'),
                ('notices', '{"{}"}', 1, 'expired', now() + interval '1 minute'),
                ('notices', '{"{}"}', 1, 'live', now() + interval '1 minute'),
                ('notices', '{"{}"}', 1, 'me', now() + interval '1 minute');
            INSERT INTO {sql.Nodes} (queue, node, host, process_id, version, expires_at, worker_count, lease_owner, permit_demand, granted_running, granted_rate, granted_burst) VALUES
                ('notices', 'b-live', 'h', 1, 'v', now() + interval '1 minute', 3, 'live', 6, 2, 1.5, 1),
                ('notices', 'c-expired', 'h', 2, 'v', now() - interval '1 second', 3, 'expired', 6, 2, 1.5, 1);
            """);

        var (others, dead) = await ReadGrantsAsync(statements, "a-me", "me");
        Assert.Equal([new NodeGrant("b-live", 3, 6, 2, 1.5, 1)], others);
        Assert.Equal(2, dead); // the killed node's row (its lease expired, not reaped yet) and the expired node's; not this node's own

        await postgres.ExecuteAsync($"UPDATE {sql.Items} SET state = 0, lease_owner = NULL, lease_until = NULL WHERE lease_owner = 'killed'");
        Assert.Equal(1, (await ReadGrantsAsync(statements, "a-me", "me")).Dead);
    }

    [Fact]
    public async Task MaxRunningPerKey_TakesAKeysItemsInEnqueueOrder_UpToM_WhateverTheirPriorities()
    {
        var (sql, schema) = await NewStoreAsync();
        var a = await InsertAsync(sql, "k", priority: 0);
        var b = await InsertAsync(sql, "k", priority: 5);
        var c = await InsertAsync(sql, "k", priority: 9);
        var d = await InsertAsync(sql, "k", priority: 9);

        // One permit: the key's oldest item takes it, not its most urgent.
        await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: 2);
        Assert.Equal(new[] { a }, (await ClaimAsync(sql, 1)).Claimed);

        // More permits: the next one of the key; its third waits behind two unfinished elders.
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
    public async Task PlainClaim_UnderAnotherSettingsVersion_ClaimsNothing_AndReturnsTheVersion()
    {
        var (sql, schema) = await NewStoreAsync();
        await InsertAsync(sql, null);
        await InsertAsync(sql, null);

        await ClusterLimitSql.SetLimitsAsync(postgres, schema, maxRunning: 5); // version 1
        Assert.Equal((0, 1L, 0L), await PlainClaimAsync(sql, 10, version: 0, peek: 0));
        Assert.Equal((1, 1L, 1L), await PlainClaimAsync(sql, 1, version: 1, peek: 5)); // one taken; of the first five ready, one waits

        await ClusterLimitSql.SetLimitsAsync(postgres, schema); // version 2
        Assert.Equal((0, 2L, 1L), await PlainClaimAsync(sql, 10, version: 1, peek: 5)); // nothing claimed under the old version; one waits
        Assert.Equal((1, 2L, 0L), await PlainClaimAsync(sql, 10, version: 2, peek: 0));
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

    private async Task<(List<NodeGrant> Others, long Dead)> ReadGrantsAsync(PermitGrantSql statements, string node, string leaseOwner)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(statements.ReadGrants, connection)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = node }, new() { Value = leaseOwner } },
        };
        await using var reader = await command.ExecuteReaderAsync();
        var (others, dead) = (new List<NodeGrant>(), 0L);
        while (await reader.ReadAsync())
        {
            if (reader.IsDBNull(0))
            {
                dead = reader.GetInt64(6);
            }
            else
            {
                others.Add(new NodeGrant(reader.GetString(0), reader.GetInt32(1), reader.GetInt32(2), reader.GetInt32(3), reader.GetDouble(4), reader.GetInt32(5)));
            }
        }

        return (others, dead);
    }

    private async Task<(int Claimed, long Version, long Waiting)> PlainClaimAsync(StorageSql sql, int count, long version, int peek)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(sql.Claim, connection)
        {
            Parameters =
            {
                new() { Value = ClusterLimitSql.Queue }, new() { Value = count }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) },
                new() { Value = version }, new() { Value = peek },
            },
        };
        await using var reader = await command.ExecuteReaderAsync();
        var (claimed, seen, waiting) = (0, -1L, -1L);
        while (await reader.ReadAsync())
        {
            if (reader.GetBoolean(reader.GetOrdinal("summary")))
            {
                (seen, waiting) = (reader.GetInt64(reader.GetOrdinal("version")), reader.GetInt64(reader.GetOrdinal("waiting")));
            }
            else
            {
                claimed++;
            }
        }

        return (claimed, seen, waiting);
    }

    /// <summary>A claim as a node runs it: the keyed claim while the settings' M is above one, else the plain claim under the current version.</summary>
    private async Task<(long[] Claimed, long HeldBack)> ClaimAsync(StorageSql sql, int count)
    {
        var perKey = await postgres.ScalarAsync<int>($"SELECT coalesce((SELECT max_running_per_key FROM {sql.QueueSettings} WHERE queue = '{ClusterLimitSql.Queue}'), 1)");
        var version = await postgres.ScalarAsync<long>($"SELECT coalesce((SELECT version FROM {sql.QueueSettings} WHERE queue = '{ClusterLimitSql.Queue}'), 0)");
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand(perKey > 1 ? new KeyedClaimSql(sql).ClaimPerKey : sql.Claim, connection)
        {
            Parameters = { new() { Value = ClusterLimitSql.Queue }, new() { Value = count }, new() { Value = "test" }, new() { Value = TimeSpan.FromMinutes(1) } },
        };
        if (perKey > 1)
        {
            command.Parameters.Add(new() { Value = perKey });
            command.Parameters.Add(new() { Value = version });
        }
        else
        {
            command.Parameters.Add(new() { Value = version });
            command.Parameters.Add(new() { Value = 0 });
        }

        var claimed = new List<long>();
        long heldBack = 0;
        await using (var reader = await command.ExecuteReaderAsync())
        {
            while (await reader.ReadAsync())
            {
                if (reader.GetBoolean(reader.GetOrdinal("summary")))
                {
                    heldBack = perKey > 1 ? reader.GetInt64(reader.GetOrdinal("held_back")) : 0;
                }
                else
                {
                    claimed.Add(reader.GetInt64(0));
                }
            }
        }

        return ([.. claimed], heldBack);
    }
}
