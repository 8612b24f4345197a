using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;

namespace BoundedWork.PostgreSql.Tests;

[Collection(PostgresCollection.Name)]
public sealed class IdempotentEnqueueTests(PostgresFixture postgres)
{
    /// <summary>
    /// The ambiguous commit, for real: a server that commits locally, then waits for a synchronous standby that never
    /// answers (only for the transaction that asks for it), and the caller's connection lost during that wait. The
    /// transaction committed; the caller got an exception.
    /// </summary>
    [Fact]
    public async Task AmbiguousCommit_RetriedWithTheSameIdempotencyKey_EnqueuesAndRunsOnce()
    {
        await using var server = await PostgresServer.StartAsync("synchronous_standby_names=nobody", "synchronous_commit=local");
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(server.ConnectionString, "ambiguous", behavior);
        await ExecuteAsync(server, "CREATE TABLE ambiguous.callbacks (callback_id text PRIMARY KEY)");

        // First try: record the callback and enqueue its notice in one transaction; the commit's reply is lost.
        long firstId;
        await using (var connection = new NpgsqlConnection(server.ConnectionString + ";Pooling=false"))
        {
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await connection.ExecuteAsync("SET LOCAL synchronous_commit = on; INSERT INTO ambiguous.callbacks VALUES ('callback-1')");
            var first = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "callback-1" }, transaction);
            Assert.False(first.IsDuplicate);
            firstId = first.ItemId;
            var commit = transaction.CommitAsync();
            await DurableQueueTests.WaitAsync(() => Scalar<long>(server, "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'") == 1, "the commit waits for the standby");
            await ExecuteAsync(server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
            var lost = await Assert.ThrowsAnyAsync<NpgsqlException>(() => commit);
            Assert.True(lost.IsTransient, lost.ToString()); // what docs/durable-queues.md's retry loop catches
        }

        Assert.Equal(1L, Scalar<long>(server, "SELECT count(*) FROM ambiguous.callbacks")); // it committed all the same

        // The caller cannot tell, so it retries the whole transaction.
        EnqueueResult retried;
        await using (var connection = new NpgsqlConnection(server.ConnectionString))
        {
            await connection.OpenAsync();
            await using var transaction = await connection.BeginTransactionAsync();
            await connection.ExecuteAsync("INSERT INTO ambiguous.callbacks VALUES ('callback-1') ON CONFLICT DO NOTHING");
            retried = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "callback-1" }, transaction);
            await transaction.CommitAsync();
        }

        Assert.Equal(new EnqueueResult(firstId, IsDuplicate: true), retried);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Any(d => d.Id == firstId), "the item is handled");
        Assert.Equal(1L, Scalar<long>(server, "SELECT count(*) FROM ambiguous.items"));
        Assert.Single(behavior.Deliveries);
    }

    [Fact]
    public async Task SameKeyTwice_ReturnsTheFirstItemsId_AndTheItemRunsOnce_KeysArePerQueue()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior();
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior);
        await postgres.ExecuteAsync($"INSERT INTO {schema}.items (queue, payload, state, idempotency_key) VALUES ('another queue', '{{}}', 2, 'order-7')");

        var first = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "order-7" });
        var second = await node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { IdempotencyKey = "order-7" });
        var other = await node.Queue.EnqueueAsync(new Notice(3), new EnqueueOptions { IdempotencyKey = "order-8" });

        Assert.False(first.IsDuplicate); // the other queue's key does not count
        Assert.Equal(new EnqueueResult(first.ItemId, IsDuplicate: true), second);
        Assert.False(other.IsDuplicate);
        Assert.NotEqual(first.ItemId, other.ItemId);
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "both stored items are handled");
        Assert.Equal([1, 3], behavior.Deliveries.Select(d => d.Item.Number).Order()); // the duplicate's item was discarded
        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE queue = 'notices'"));
    }

    [Fact]
    public async Task InvalidKeys_AreRefusedBeforeAnythingIsStored()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);

        // The obsolete EnqueueIdempotentAsync takes a key that must not be null (EnqueueOptions' null key is no key).
#pragma warning disable CS0618
        await Assert.ThrowsAsync<ArgumentNullException>("idempotencyKey", () => node.Queue.EnqueueIdempotentAsync(new Notice(1), null!));
#pragma warning restore CS0618
        await Assert.ThrowsAsync<ArgumentException>("idempotencyKey", () => node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "" }));
        var tooLong = await Assert.ThrowsAsync<ArgumentException>("idempotencyKey", () => node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = new string('k', 257) }));
        Assert.StartsWith("The idempotency key must be at most 256 characters (was 257).", tooLong.Message, StringComparison.Ordinal);
        var nul = await Assert.ThrowsAsync<ArgumentException>("idempotencyKey", () => node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "a\0b" }));
        Assert.Contains("NUL", nul.Message, StringComparison.Ordinal);
        var surrogate = await Assert.ThrowsAsync<ArgumentException>("idempotencyKey", () => node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "order-\uD800" }));
        Assert.StartsWith("The idempotency key must be valid Unicode text (a lone surrogate at index 6).", surrogate.Message, StringComparison.Ordinal);
        Assert.False((await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "order-\U0001F600" })).IsDuplicate); // a surrogate pair is fine
        Assert.False((await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = new string('k', 256) })).IsDuplicate);
        Assert.Equal(2L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items"));
    }

    [Fact]
    public async Task Key_IsRememberedWhileTheRowExists_CompletedAndDeadLettersIncluded_AndFreeAfterCleanup()
    {
        var schema = await postgres.NewSchemaAsync();
        var behavior = new Behavior { Handle = (item, _) => ThrowIf(item.Number < 0) };
        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, queue: o => o.MaxRetryAttempts = 0, storage: o =>
        {
            o.CompletedRetention = TimeSpan.FromHours(1);
            o.DeadLetterRetention = TimeSpan.FromHours(1);
            o.CleanupInterval = TimeSpan.FromMilliseconds(100);
        });

        var completed = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "done" });
        var dead = await node.Queue.EnqueueAsync(new Notice(-1), new EnqueueOptions { IdempotencyKey = "failed" });
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (2, 3)").Result == 2, "one item completed and one dead letter, both recorded");

        Assert.Equal(new EnqueueResult(completed.ItemId, IsDuplicate: true), await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "done" }));
        Assert.Equal(new EnqueueResult(dead.ItemId, IsDuplicate: true), await node.Queue.EnqueueAsync(new Notice(-1), new EnqueueOptions { IdempotencyKey = "failed" }));

        // Cleanup deletes the completed row once its retention has passed: the key is free again.
        await postgres.ExecuteAsync($"UPDATE {schema}.items SET finished_at = now() - interval '2 hours' WHERE id = {completed.ItemId}");
        await DurableQueueTests.WaitAsync(() => postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE id = {completed.ItemId}").Result == 0, "cleanup deletes the completed row");
        var again = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "done" });
        Assert.False(again.IsDuplicate);
        Assert.NotEqual(completed.ItemId, again.ItemId);

        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == 2, "the new item is handled");
        Assert.Equal([completed.ItemId, again.ItemId], behavior.Deliveries.Select(d => d.Id).Order());
        Assert.Equal(dead.ItemId, Assert.Single(behavior.DeadLetters).ItemId);
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task SameKeyInTwoTransactions_TheSecondWaitsForTheFirst_DuplicateIfItCommits_StoredIfItRollsBack(bool commit)
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var firstConnection = new NpgsqlConnection(postgres.ConnectionString);
        await firstConnection.OpenAsync();
        await using var secondConnection = new NpgsqlConnection(postgres.ConnectionString);
        await secondConnection.OpenAsync();
        await using var firstTransaction = await firstConnection.BeginTransactionAsync();
        await using var secondTransaction = await secondConnection.BeginTransactionAsync();

        var first = await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "callback-9" }, firstTransaction);
        var second = node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { IdempotencyKey = "callback-9" }, secondTransaction);
        await DurableQueueTests.WaitAsync(
            () => postgres.ScalarAsync<long>("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'transactionid'").Result == 1,
            "the second enqueue waits for the first transaction");
        Assert.False(second.IsCompleted);

        if (commit)
        {
            await firstTransaction.CommitAsync();
            Assert.Equal(new EnqueueResult(first.ItemId, IsDuplicate: true), await second);
        }
        else
        {
            await firstTransaction.RollbackAsync();
            var stored = await second;
            Assert.False(stored.IsDuplicate);
            Assert.NotEqual(first.ItemId, stored.ItemId);
        }

        await secondTransaction.CommitAsync();
        Assert.Equal(1L, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE idempotency_key = 'callback-9'"));
        Assert.Equal(commit ? 1 : 2, await postgres.ScalarAsync<int>($"SELECT (payload->>'Number')::int FROM {schema}.items WHERE idempotency_key = 'callback-9'"));
    }

    [Fact]
    public async Task RepeatableReadTransaction_KeyCommittedOutsideItsSnapshot_FailsWithASerializationError()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var transaction = await connection.BeginTransactionAsync(System.Data.IsolationLevel.RepeatableRead);
        await connection.ExecuteAsync("SELECT 1"); // the snapshot is taken here

        await node.Queue.EnqueueAsync(new Notice(1), new EnqueueOptions { IdempotencyKey = "callback-3" });
        var error = await Assert.ThrowsAsync<PostgresException>(() => node.Queue.EnqueueAsync(new Notice(2), new EnqueueOptions { IdempotencyKey = "callback-3" }, transaction));

        Assert.Equal(PostgresErrorCodes.SerializationFailure, error.SqlState);
    }

    private static void ThrowIf(bool fail)
    {
        if (fail)
        {
            throw new InvalidOperationException("this item always fails");
        }
    }

    private static async Task ExecuteAsync(PostgresServer server, string sql)
    {
        await using var connection = new NpgsqlConnection(server.ConnectionString);
        await connection.OpenAsync();
        await connection.ExecuteAsync(sql);
    }

    private static T Scalar<T>(PostgresServer server, string sql)
    {
        using var connection = new NpgsqlConnection(server.ConnectionString);
        connection.Open();
        using var command = new NpgsqlCommand(sql, connection);
        return (T)command.ExecuteScalar()!;
    }
}
