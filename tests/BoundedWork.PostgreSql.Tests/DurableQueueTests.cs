using Microsoft.Extensions.DependencyInjection;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.TestConsumer;
using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

[Collection(PostgresCollection.Name)]
public sealed class DurableQueueTests(PostgresFixture postgres)
{
    [Fact]
    public async Task EnqueuedItems_AreEachHandledOnce_WithTheIdTheEnqueueReturned()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);

        var ids = new Dictionary<long, int>();
        for (var i = 0; i < 200; i++)
        {
            ids.Add(await node.Queue.EnqueueWithIdAsync(new Notice(i)), i);
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count >= 200, "200 items are handled");
        var deliveries = behavior.Deliveries.ToArray();
        Assert.Equal(200, deliveries.Length);
        Assert.All(deliveries, d => Assert.Equal(ids[d.Id], d.Item.Number));
        Assert.All(deliveries, d => Assert.Equal(1, d.Attempt));
        Assert.Equal(200, deliveries.Select(d => d.Id).Distinct().Count());
    }

    [Fact]
    public async Task TransactionalEnqueue_RolledBack_EnqueuesNothing_Committed_EnqueuesExactlyOnce()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);

        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await connection.ExecuteAsync($"CREATE TABLE {schema}.callbacks (number integer PRIMARY KEY)");

        long rolledBackId;
        await using (var transaction = await connection.BeginTransactionAsync())
        {
            await connection.ExecuteAsync($"INSERT INTO {schema}.callbacks VALUES (1)");
            rolledBackId = await node.Queue.EnqueueAsync(new Notice(1), transaction);
            await transaction.RollbackAsync();
        }

        long committedId;
        await using (var transaction = await connection.BeginTransactionAsync())
        {
            await connection.ExecuteAsync($"INSERT INTO {schema}.callbacks VALUES (2)");
            committedId = await node.Queue.EnqueueAsync(new Notice(2), transaction);
            await transaction.CommitAsync();
        }

        // The committed item is handled; by then, had the rolled-back one existed (its id is lower), it would have been claimed first.
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Any(d => d.Id == committedId), "the committed item is handled");
        Assert.Single(behavior.Deliveries);
        Assert.DoesNotContain(behavior.Deliveries, d => d.Id == rolledBackId);
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {rolledBackId}"));
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {committedId}"));
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.callbacks"));
    }

    [Fact]
    public async Task FailingHandler_RetriesAreStoredWithBackoff_ThenTheItemIsADeadLetterInTheTableAndTheHandlers()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (item, _) => throw new InvalidOperationException("payment provider refused " + item.Number) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 2);

        var id = await node.Queue.EnqueueWithIdAsync(new Notice(7));

        await behavior.WaitUntilAsync(() => !behavior.DeadLetters.IsEmpty, "the item is a dead letter");
        var letter = Assert.Single(behavior.DeadLetters);
        Assert.Equal(DeadLetterReason.Failed, letter.Reason);
        Assert.Equal(id, letter.ItemId);
        Assert.Equal(7, letter.Item.Number);
        Assert.Equal(3, letter.Attempts);
        Assert.Contains("payment provider refused 7", letter.Exception!.Message, StringComparison.Ordinal);
        Assert.Equal("{\"Key\": null, \"Number\": 7}", letter.Payload); // as jsonb stores it
        Assert.Empty(behavior.Deliveries); // the handler threw on every delivery, so none was recorded

        await WaitForRowAsync(schema, id, state: 3);
        var error = await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items WHERE id = {id}");
        Assert.Contains("Failed: System.InvalidOperationException: payment provider refused 7", error, StringComparison.Ordinal);
        Assert.Equal(3, await postgres.ScalarAsync<int>($"SELECT attempts FROM {schema}.items WHERE id = {id}"));
    }

    [Fact]
    public async Task FailedDelivery_IsStoredForLater_NotHeldByAWorker()
    {
        var schema = await postgres.NewSchemaAsync();
        using var secondAttempt = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (_, context) =>
            {
                if (context.Attempt == 1)
                {
                    throw new TimeoutException("first delivery fails");
                }
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            queue: o => { o.RetryDelay = TimeSpan.FromHours(1); o.MaxRetryDelay = TimeSpan.FromHours(1); });

        var id = await node.Queue.EnqueueWithIdAsync(new Notice(1));

        // The retry is a row scheduled about an hour ahead (±20% jitter), with the failure recorded; no worker holds it.
        await WaitForRowAsync(schema, id, state: StorageSql.Scheduled, extraCondition: "run_at > now() + interval '30 minutes'");
        Assert.Contains("first delivery fails", await postgres.ScalarAsync<string>($"SELECT last_error FROM {schema}.items WHERE id = {id}"), StringComparison.Ordinal);
        Assert.Equal(0, node.Executor.GetStatistics().BusyWorkerCount);

        // Bring the retry forward: the next delivery is attempt 2 and succeeds.
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() WHERE id = {id}");
        await behavior.WaitUntilAsync(() => !behavior.Deliveries.IsEmpty, "the retry is handled");
        Assert.Equal(2, Assert.Single(behavior.Deliveries).Attempt);
        await WaitForRowAsync(schema, id, state: 2);
    }

    [Fact]
    public async Task MalformedPayload_BecomesADeadLetterWithTheReason_AndTheWorkersGoOn()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);

        // Another producer wrote a payload of the wrong shape, then a null.
        await postgres.ExecuteAsync($$"""INSERT INTO {{schema}}.items (queue, payload) VALUES ('notices', '{"Number":"not a number"}'), ('notices', 'null')""");
        await node.Queue.EnqueueAsync(new Notice(42));

        await behavior.WaitUntilAsync(() => behavior.DeadLetters.Count == 2 && behavior.Deliveries.Count == 1, "both bad rows are dead letters and the good item ran");
        Assert.All(behavior.DeadLetters, letter =>
        {
            Assert.Equal(DeadLetterReason.Malformed, letter.Reason);
            Assert.Null(letter.Item);
            Assert.IsType<System.Text.Json.JsonException>(letter.Exception);
        });
        Assert.Contains(behavior.DeadLetters, letter => letter.Payload == "{\"Number\": \"not a number\"}");
        Assert.Equal(42, Assert.Single(behavior.Deliveries).Item.Number);
        Assert.Equal(2, node.Executor.GetStatistics().LiveWorkerCount);
        await WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3 AND last_error LIKE 'Malformed: System.Text.Json.JsonException%'").Result == 2,
            "both bad rows are dead letters in the table, with the reason");
    }

    [Fact]
    public async Task ResizingTheExecutor_ChangesHowManyItemsTheNodeClaims()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        var started = 0;
        var behavior = new Behavior
        {
            Handle = (_, _) =>
            {
                Interlocked.Increment(ref started);
                release.Wait(QueueNode.Patience);
            },
        };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.ClaimsPerWorker = 1);
        for (var i = 0; i < 10; i++)
        {
            await node.Queue.EnqueueAsync(new Notice(i));
        }

        await WaitAsync(() => Volatile.Read(ref started) == 2, "both workers hold an item");
        var statistics = await node.Queue.ReadStatisticsAsync();
        Assert.Equal(2, statistics.Running); // two workers × one claim each: nothing more is claimed
        Assert.Equal(8, statistics.Ready);

        node.Executor.Reconfigure(node.Executor.Settings with { WorkerCount = 5 });
        await WaitAsync(() => Volatile.Read(ref started) == 5, "the three new workers hold an item");
        statistics = await node.Queue.ReadStatisticsAsync();
        Assert.Equal(5, statistics.Running);
        Assert.Equal(5, statistics.Ready);

        release.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 10, "every item is handled");
    }

    [Fact]
    public async Task StoppingNode_HandsBackWhatItClaimedButDidNotRun_AndANewNodeRunsEverything()
    {
        var schema = await postgres.NewSchemaAsync();
        using var release = new ManualResetEventSlim();
        using var entered = new ManualResetEventSlim();
        var first = new Behavior
        {
            Handle = (_, _) =>
            {
                entered.Set();
                release.Wait(QueueNode.Patience);
            },
        };
        var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, first,
            storage: o => o.ClaimsPerWorker = 4,
            executor: o => o.WorkerCount = 1,
            services: s => s.Configure<Microsoft.Extensions.Hosting.HostOptions>(o => o.ShutdownTimeout = TimeSpan.FromMilliseconds(300)));
        for (var i = 0; i < 4; i++)
        {
            await node.Queue.EnqueueAsync(new Notice(i));
        }

        Assert.True(entered.Wait(QueueNode.Patience));
        await WaitAsync(() => node.Queue.ReadStatisticsAsync().Result.Running == 4, "the node claims four items");

        // Stop while one item blocks its only worker: the three queued behind it are released at the deadline.
        var stopping = node.DisposeAsync().AsTask();
        await WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND attempts = 0").Result == 3,
            "the three unrun claims are ready again, their delivery not counted");
        release.Set();
        await stopping;

        var second = new Behavior();
        await using var next = await QueueNode.StartAsync(postgres.ConnectionString, schema, second, node: "b");
        await second.WaitUntilAsync(() => second.Deliveries.Count + first.Deliveries.Count >= 4 && second.Deliveries.Count >= 3, "the new node runs the released items");
        Assert.Equal([0, 1, 2, 3], first.Deliveries.Concat(second.Deliveries).Select(d => d.Item.Number).Distinct().Order());
    }

    [Fact]
    public async Task OrderingKey_ItemsOfOneKeyRunOneAtATimeInOrder_AcrossTwoNodes()
    {
        var schema = await postgres.NewSchemaAsync();
        var running = new System.Collections.Concurrent.ConcurrentDictionary<string, int>();
        var violations = 0;
        var behavior = new Behavior
        {
            Handle = (item, _) =>
            {
                if (running.AddOrUpdate(item.Key!, 1, (_, n) => n + 1) > 1)
                {
                    Interlocked.Increment(ref violations);
                }

                Thread.SpinWait(20_000);
                running.AddOrUpdate(item.Key!, 0, (_, n) => n - 1);
            },
        };
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "a", queue: o => o.OrderingKey = n => n.Key);
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "b", queue: o => o.OrderingKey = n => n.Key);

        for (var i = 0; i < 100; i++)
        {
            // Twelve keys: more than one node may hold (two workers × two claims), so both nodes take part.
            await (i % 2 == 0 ? a : b).Queue.EnqueueAsync(new Notice(i, "account-" + (i % 12)));
        }

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 100, "every item is handled");
        Assert.True(violations == 0, $"{violations} items started while another item of their key was running.");
        foreach (var key in behavior.Deliveries.GroupBy(d => d.Item.Key))
        {
            var numbers = key.Select(d => d.Item.Number).ToArray(); // in the order the deliveries ended
            Assert.True(numbers.Order().SequenceEqual(numbers), $"{key.Key} ran out of order: {string.Join(",", numbers)}");
        }

        var perNode = behavior.Deliveries.GroupBy(d => d.Node).ToDictionary(g => g.Key, g => g.Count());
        Assert.True(perNode.Count == 2, $"Only one node handled items: {string.Join(", ", perNode.Select(n => $"{n.Key}={n.Value}"))}.");
    }

    [Fact]
    public async Task NodesStartingAtOnce_CreateTheSchemaOnce()
    {
        var schema = "m_" + Guid.NewGuid().ToString("N")[..12];
        var behavior = new Behavior();
        var nodes = await Task.WhenAll(Enumerable.Range(0, 4).Select(i =>
            QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, node: "n" + i, storage: o => o.Schema = schema)));
        try
        {
            var versions = new StorageSql(schema).Migrations.Count;
            Assert.Equal(versions, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.schema_version")); // each version applied once
            Assert.Equal(versions, await postgres.ScalarAsync<int>($"SELECT max(version) FROM {schema}.schema_version"));
            await nodes[3].Queue.EnqueueAsync(new Notice(1));
            await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the item is handled");
        }
        finally
        {
            foreach (var node in nodes)
            {
                await node.DisposeAsync();
            }
        }
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion1_IsUpgradedOnStart_ItsItemsStillRun_AndIdempotencyKeysWork()
    {
        var (schema, sql) = await SchemaAtVersionAsync(1);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Items}} (queue, payload) VALUES ('notices', '{"Number": 1}');
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        var keyed = await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { IdempotencyKey = "after-upgrade" });
        Assert.True((await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { IdempotencyKey = "after-upgrade" })).IsDuplicate);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the item stored before the upgrade and the keyed one are handled");
        Assert.Equal([1, 2], behavior.Deliveries.Select(d => d.Item.Number).Order());
        Assert.Contains(behavior.Deliveries, d => d.Id == keyed.ItemId);
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion2_IsUpgradedOnStart_StoredRetriesBecomeScheduled_AndEveryItemStillRunsInItsTurn()
    {
        var (schema, sql) = await SchemaAtVersionAsync(2);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Items}} (queue, payload, ordering_key) VALUES ('notices', '{"Number": 1, "Key": "k"}', 'k');
            INSERT INTO {{sql.Items}} (queue, payload, ordering_key, attempts, run_at, last_error)
                VALUES ('notices', '{"Number": 2, "Key": "k"}', 'k', 1, now() + interval '1 hour', 'a stored retry');
            INSERT INTO {{sql.Items}} (queue, payload, ordering_key) VALUES ('notices', '{"Number": 3, "Key": "k"}', 'k');
            INSERT INTO {{sql.Items}} (queue, payload, state, finished_at) VALUES ('notices', '{"Number": 4}', 2, now());
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema,
            queue: o => o.OrderingKey = n => n.Key);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        Assert.Equal(StorageSql.Scheduled, await postgres.ScalarAsync<short>($"SELECT state FROM {schema}.items WHERE payload->>'Number' = '2'"));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the ready item of the key is handled");

        // The retry holds its key: the third item waits behind it, as it did before the upgrade.
        await WaitAsync(() => node.Queue.ReadStatisticsAsync().Result is { Scheduled: 1, Ready: 1, Running: 0 }, "the retry is scheduled and the item behind it ready");
        Assert.Equal([1], behavior.Deliveries.Select(d => d.Item.Number));

        await postgres.ExecuteAsync($"UPDATE {schema}.items SET run_at = now() WHERE payload->>'Number' = '2'");
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3, "the retry, then the item behind it, are handled");
        Assert.Equal([1, 2, 3], behavior.Deliveries.Select(d => d.Item.Number));
        Assert.Equal(2, behavior.Deliveries.Single(d => d.Item.Number == 2).Attempt);
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion4_IsUpgradedOnStart_NodeRowsKeepTheirColumns_AndGainAnEmptyGrant()
    {
        var (schema, sql) = await SchemaAtVersionAsync(4);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Nodes}} (queue, node, host, process_id, version, expires_at, worker_count)
                VALUES ('notices', 'old', 'h', 1, '0.1.0', now() + interval '1 hour', 7);
            INSERT INTO {{sql.Items}} (queue, payload) VALUES ('notices', '{"Number": 1}');
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        Assert.Equal("7 0 0 0", await postgres.ScalarAsync<string>(
            $"SELECT worker_count || ' ' || granted_running || ' ' || running_in_use || ' ' || granted_burst FROM {schema}.nodes WHERE node = 'old' AND lease_owner IS NULL"));
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 1, "the item stored before the upgrade is handled");
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion5_IsUpgradedOnStart_AnOldNodesExpiredClaimIsReaped_RunsAndItsOutcomeLands()
    {
        var (schema, sql) = await SchemaAtVersionAsync(5);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Items}} (queue, payload, state, attempts, lease_owner, lease_until)
                VALUES ('notices', '{"Number": 1}', 1, 1, 'an old node', now() - interval '1 second');
            INSERT INTO {{sql.Items}} (queue, payload) VALUES ('notices', '{"Number": 2}');
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items are handled");
        await WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = {StorageSql.Completed}").Result == 2, "both outcomes are written");
        Assert.Equal("2 1, 1 1", await postgres.ScalarAsync<string>($"SELECT string_agg(attempts || ' ' || delivery, ', ' ORDER BY id) FROM {schema}.items"));
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion6_WithARunAtStoredAsMinusInfinity_IsRepairedOnStart_TheStatisticsReadAndTheItemRuns()
    {
        // Earlier versions stored RunAt = default(DateTimeOffset) as -infinity: the statistics read then failed on
        // every node ("cannot subtract infinite timestamps"), and so did every claim that left such an item waiting.
        var (schema, sql) = await SchemaAtVersionAsync(6);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Items}} (queue, payload, run_at) VALUES ('notices', '{"Number": 1}', '-infinity');
            INSERT INTO {{sql.Items}} (queue, payload) VALUES ('notices', '{"Number": 2}');
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both items are handled");
        Assert.Equal([1, 2], behavior.Deliveries.Select(d => d.Item.Number).Order());
        Assert.Equal(0L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE run_at = '-infinity' OR enqueued_at = '-infinity'"));
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var statistics = new NpgsqlCommand(sql.Statistics, connection);
        statistics.Parameters.AddWithValue("notices");
        Assert.NotNull(await statistics.ExecuteScalarAsync()); // failed with 22008 before the repair
    }

    [Fact]
    public async Task DatabaseAtSchemaVersion10_IsUpgradedOnStart_ItemsAndSettingsKeepTheirValues_AndTenantItemsRun()
    {
        var (schema, sql) = await SchemaAtVersionAsync(10);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.Items}} (queue, payload) VALUES ('notices', '{"Number": 1}');
            INSERT INTO {{sql.QueueSettings}} (queue, max_running, version) VALUES ('notices', 5, 3);
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.Schema = schema);

        Assert.Equal(Enumerable.Range(1, sql.Migrations.Count), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        Assert.Equal(13, sql.Migrations.Count);
        var tenant = await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { Tenant = "acme" });
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the item stored before the upgrade and the tenant's item are handled");
        Assert.Equal("- acme", await postgres.ScalarAsync<string>($"SELECT string_agg(coalesce(tenant, '-'), ' ' ORDER BY id) FROM {sql.Items}"));
        Assert.Equal("5 3 false 1", await postgres.ScalarAsync<string>(
            $"SELECT max_running || ' ' || version || ' ' || fair_share || ' ' || tenant_default_weight FROM {sql.QueueSettings} WHERE queue = 'notices'"));
        Assert.Contains(behavior.Deliveries, d => d.Id == tenant.ItemId);
    }

    /// <summary>
    /// A schema at version 12 with a fair queue and a tenant's bucket: upgraded on start (version 13: the virtual times),
    /// the tenants' items claimed by the fair claim (which writes their virtual times and the queue's clock); then the
    /// queue's maintenance removes those once no item is ready, and the bucket (the queue has no per-tenant rate).
    /// </summary>
    [Fact]
    public async Task DatabaseAtSchemaVersion12_IsUpgradedOnStart_BucketsKept_VirtualTimesWritten_AndCleanedByTheMaintenance()
    {
        var (schema, sql) = await SchemaAtVersionAsync(12);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{sql.QueueSettings}} (queue, fair_share, tenant_weights, version) VALUES ('notices', true, '{"acme": 2}', 1);
            INSERT INTO {{sql.TenantTokens}} (queue, tenant, tokens, tokens_at) VALUES ('notices', 'acme', 0.5, now());
            INSERT INTO {{sql.Items}} (queue, payload, tenant) SELECT 'notices', '{"Number": 1}', t FROM unnest(ARRAY['acme', 'acme', 'globex']) t;
            """);
        var behavior = new Behavior();

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, storage: o => o.CleanupInterval = TimeSpan.FromMilliseconds(100));

        Assert.Equal(Enumerable.Range(1, 13), (await postgres.ScalarAsync<int[]>($"SELECT array_agg(version ORDER BY version) FROM {schema}.schema_version")).AsEnumerable());
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 3, "the tenants' items are handled");
        var rows = $"SELECT (SELECT count(*) FROM {sql.TenantVtime}) + (SELECT count(*) FROM {sql.QueueVtime}) + (SELECT count(*) FROM {sql.TenantTokens})";
        for (var deadline = DateTime.UtcNow + QueueNode.Patience; await postgres.ScalarAsync<long>(rows) > 0; await Task.Delay(50))
        {
            Assert.True(DateTime.UtcNow < deadline, "The maintenance did not remove the tenants' rows.");
        }

        Assert.Equal(3L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {sql.Items} WHERE state = {StorageSql.Completed}"));
    }

    [Fact]
    public async Task SchemaNewerThanThePackage_FailsTheStart_NamingBothVersions()
    {
        var schema = "m_" + Guid.NewGuid().ToString("N")[..12];
        var sql = new StorageSql(schema);
        var newer = sql.Migrations.Count + 1;
        await postgres.ExecuteAsync($"""
            CREATE SCHEMA {schema};
            CREATE TABLE {sql.SchemaVersion} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
            INSERT INTO {sql.SchemaVersion} (version) VALUES ({newer});
            """);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => QueueNode.StartAsync(postgres.ConnectionString, schema, new Behavior(), storage: o => o.Schema = schema));

        Assert.Equal($"The BoundedWork schema \"{schema}\" is at version {newer}, newer than this package's version {sql.Migrations.Count}: upgrade BoundedWork.PostgreSql on this node.", error.Message);
    }

    private async Task WaitForRowAsync(string schema, long id, short state, string extraCondition = "true") =>
        await WaitAsync(
            () => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {id} AND state = {state} AND {extraCondition}").Result == 1,
            $"item {id} is in state {state} ({extraCondition})");

    /// <summary>
    /// Waits until a condition on the database (or another process) holds, re-checking every 20 ms: those have no
    /// in-process signal to wait on. The wait is for a state, never a guess at a duration; it fails after the patience.
    /// </summary>
    internal static async Task WaitAsync(Func<bool> condition, string what)
    {
        var deadline = DateTime.UtcNow + QueueNode.Patience;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until {what}.");
            await Task.Delay(20); // the poll's interval (see above)
        }
    }

    /// <summary>A new schema as a node of an earlier version left it: the migrations up to <paramref name="version"/>, recorded.</summary>
    private async Task<(string Schema, StorageSql Sql)> SchemaAtVersionAsync(int version)
    {
        var schema = "m_" + Guid.NewGuid().ToString("N")[..12];
        var sql = new StorageSql(schema);
        await postgres.ExecuteAsync($"""
            CREATE SCHEMA {schema};
            CREATE TABLE {sql.SchemaVersion} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
            {string.Join("\n", sql.Migrations.Take(version))}
            INSERT INTO {sql.SchemaVersion} (version) SELECT generate_series(1, {version});
            """);
        return (schema, sql);
    }
}

internal static class NpgsqlTestExtensions
{
    public static async Task ExecuteAsync(this NpgsqlConnection connection, string sql)
    {
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }
}
