using System.Text.Json;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;
using Xunit.Abstractions;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// The search over stored items and its bulk actions (<see cref="IStoredItemSearch"/>) against a real server: every
/// filter and the keyset paging against a model computed from the rows; the rows a page examines counted by the
/// database (EXPLAIN ANALYZE) on a million-row table; the dry run's count against the applied count and the guard of
/// its token; a bulk cancel while consumers run, checked by a witness table the handlers write; hostile input refused
/// naming the field, with the table unchanged.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class ItemSearchTests(PostgresFixture postgres, ITestOutputHelper output)
{
    private static readonly StoredItemState[] s_states = Enum.GetValues<StoredItemState>();

    [Fact]
    public async Task Search_EveryFilterAndKeysetPaging_MatchTheModel()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        // 600 rows over every state, a few priorities and run times (ties included), keys, errors and payload groups.
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, ordering_key, priority, state, run_at, enqueued_at, finished_at, attempts, last_error)
            SELECT 'notices', jsonb_build_object('Number', i, 'Key', 'k' || (i % 5), 'Customer', jsonb_build_object('Id', 'c' || (i % 4))),
                   CASE WHEN i % 3 = 0 THEN NULL ELSE 'k' || (i % 5) END, (i % 3) - 1,
                   (ARRAY[0, 5, 1, 2, 3, 4])[1 + i % 6],
                   CASE WHEN i % 6 = 1 THEN now() + (i % 7) * interval '1 minute' ELSE now() - (i % 11) * interval '1 minute' END,
                   now() - (i % 13) * interval '1 hour',
                   CASE WHEN i % 6 >= 3 THEN now() - (i % 17) * interval '1 minute' END,
                   1 + i % 3,
                   CASE WHEN i % 4 = 0 THEN 'Failed: TimeoutException: provider ' || (i % 3) END
            FROM generate_series(0, 599) AS i ORDER BY i;
            INSERT INTO {{schema}}.items (queue, payload, state) VALUES ('other', '{"Number": 1}', 0), ('other', '{"Number": 2}', 3);
            UPDATE {{schema}}.items SET lease_owner = 'x', lease_until = now() + interval '1 hour' WHERE state = 1;
            """);
        var rows = await ReadRowsAsync(schema);
        var now = DateTimeOffset.UtcNow;

        foreach (var state in s_states)
        {
            StoredItemQuery[] queries =
            [
                new() { State = state },
                new() { State = state, OrderingKey = "k2" },
                new() { State = state, ErrorContains = "TIMEOUTexception: provider 1" },
                new() { State = state, PayloadPath = "Customer.Id", PayloadEquals = "c3" },
                new() { State = state, PayloadPath = "Number", PayloadEquals = "42" },
                new() { State = state, EnqueuedSince = now.AddHours(-6.5), EnqueuedUntil = now.AddHours(-2.5), OrderingKey = "k1" },
                state == StoredItemState.Running ? new() { State = state, PayloadPath = "Key", PayloadEquals = "k4" }
                    : new() { State = state, ChangedSince = now.AddMinutes(-8.5), ChangedUntil = now.AddMinutes(3.5) },
            ];
            foreach (var query in queries)
            {
                var expected = Model(rows, query, now).Select(r => r.Id).ToList();
                var seen = new List<long>();
                string? cursor = null;
                do
                {
                    var page = await node.Queue.SearchItemsAsync(query with { Limit = 7, Cursor = cursor });
                    Assert.True(page.Items.Count <= 7);
                    Assert.All(page.Items, item => Assert.Equal(state, item.State));
                    seen.AddRange(page.Items.Select(item => item.ItemId));
                    cursor = page.NextCursor;
                }
                while (cursor is not null);

                Assert.True(expected.SequenceEqual(seen), $"{query}: expected [{string.Join(", ", expected)}], found [{string.Join(", ", seen)}].");
            }
        }

        var one = (await node.Queue.SearchItemsAsync(new StoredItemQuery { State = StoredItemState.DeadLetter, PayloadPath = "Number", PayloadEquals = "街" })).Items;
        Assert.Empty(one);
    }

    [Fact]
    public async Task Search_OverAMillionRows_ExaminesABoundedNumberOfRowsAPage()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        // A million rows: 400,000 ready over three priorities, 200,000 scheduled, 400,000 dead; one rare payload.
        await PlanCost.FillAsync(postgres, $$"""
            INSERT INTO {{schema}}.items (queue, payload, ordering_key, priority, state, run_at, finished_at, last_error)
            SELECT 'notices', jsonb_build_object('Number', i), 'k' || (i % 1000), CASE WHEN i % 10 < 4 THEN (i % 3) - 1 ELSE 0 END,
                   CASE WHEN i % 10 < 4 THEN 0 WHEN i % 10 < 6 THEN 5 ELSE 3 END,
                   CASE WHEN i % 10 BETWEEN 4 AND 5 THEN now() + (i % 977) * interval '1 second' ELSE now() - (i % 977) * interval '1 second' END,
                   CASE WHEN i % 10 >= 6 THEN now() - (i % 991) * interval '1 second' END,
                   CASE WHEN i % 10 >= 6 THEN 'Failed: boom ' || (i % 7) END
            FROM generate_series(1, 1000000) AS i;
            ANALYZE {{schema}}.items;
            """);
        var sql = new StorageSql(schema);
        const long Bound = (2 * ItemSearchSql.ScanBudget) + 100;
        foreach (var state in new[] { StoredItemState.Ready, StoredItemState.Scheduled, StoredItemState.DeadLetter, StoredItemState.Running })
        {
            var query = new StoredItemQuery { State = state, PayloadPath = "Number", PayloadEquals = "999999", ErrorContains = "boom" };
            var (examined, _) = await ExplainAsync(sql, query, cursor: null);
            output.WriteLine($"{state}, first page: {examined} rows examined");
            Assert.True(examined <= Bound, $"{state}, first page: {examined} rows examined, more than {Bound}.");

            // Deep in the state: the cursor of the page after the budget ran out several times.
            var page = await node.Queue.SearchItemsAsync(query with { Limit = 10 });
            Assert.True(page.Examined <= ItemSearchSql.ScanBudget);
            for (var i = 0; i < 3 && page.NextCursor is not null; i++)
            {
                page = await node.Queue.SearchItemsAsync(query with { Limit = 10, Cursor = page.NextCursor });
            }

            if (page.NextCursor is { } deep)
            {
                var (deepExamined, _) = await ExplainAsync(sql, query, ItemCursor.Parse(deep, state));
                output.WriteLine($"{state}, a later page: {deepExamined} rows examined");
                Assert.True(deepExamined <= Bound, $"{state}, a later page: {deepExamined} rows examined, more than {Bound}.");
            }
        }
    }

    [Fact]
    public async Task DryRun_CountsWhatTheActionThenApplies_AndItsTokenGuardsTheSelection()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await postgres.ExecuteAsync($$"""
            INSERT INTO {{schema}}.items (queue, payload, ordering_key, state, run_at, finished_at, attempts, last_error)
            SELECT 'notices', jsonb_build_object('Number', i, 'Tenant', 't' || (i % 3)), NULL,
                   CASE WHEN i % 2 = 0 THEN 0 ELSE 3 END, now() - interval '1 minute',
                   CASE WHEN i % 2 = 1 THEN now() - (i % 50) * interval '1 second' END, 1,
                   CASE WHEN i % 2 = 1 THEN 'Failed: provider said ' || (i % 5) END
            FROM generate_series(0, 2599) AS i;
            """);
        var queue = node.Queue;

        // 1,300 ready items, of which tenant t1 has 433 (spread over three batches).
        var cancel = new StoredItemAction { Kind = StoredItemActionKind.Cancel, Selection = new() { State = StoredItemState.Ready, PayloadPath = "Tenant", PayloadEquals = "t1" } };
        var preview = await queue.PreviewItemActionAsync(cancel);
        Assert.Equal(433, preview.Count);
        Assert.Equal(433, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND payload->>'Tenant' = 't1'"));

        // The token of another selection, another action or another value is refused; nothing changes.
        var other = cancel with { Selection = cancel.Selection with { PayloadEquals = "t2" } };
        Assert.Equal("confirmToken", (await Assert.ThrowsAsync<ArgumentException>(() => queue.ApplyItemActionAsync(other, preview.ConfirmToken))).ParamName);
        Assert.Equal("confirmToken", (await Assert.ThrowsAsync<ArgumentException>(() => queue.ApplyItemActionAsync(cancel, "433.0000"))).ParamName);
        Assert.Equal("confirmToken", (await Assert.ThrowsAsync<ArgumentException>(() => queue.ApplyItemActionAsync(cancel, "garbage"))).ParamName);
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4"));

        var result = await queue.ApplyItemActionAsync(cancel, preview.ConfirmToken);
        Assert.Equal(new StoredItemActionResult(433, 0, false), result);
        Assert.Equal(433, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4 AND payload->>'Tenant' = 't1'"));
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4 AND payload->>'Tenant' <> 't1'"));

        // A selection of the whole state: the token caps the action at the dry run's count even when the state grew since.
        var everything = new StoredItemAction { Kind = StoredItemActionKind.SetPriority, Priority = 7, Selection = new() { State = StoredItemState.Ready } };
        var all = await queue.PreviewItemActionAsync(everything);
        Assert.Equal(1300 - 433, all.Count);
        await postgres.ExecuteAsync($"INSERT INTO {schema}.items (queue, payload, state, run_at) SELECT 'notices', '{{}}', s, now() + (s - 1) * interval '1 hour' FROM generate_series(1, 10), (VALUES (0), (5)) AS v(s)");
        var capped = await queue.ApplyItemActionAsync(everything, all.ConfirmToken);
        Assert.Equal(all.Count, capped.Applied);
        Assert.True(capped.StoppedAtConfirmedCount);
        Assert.Equal(all.Count, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND priority = 7"));
        Assert.Equal(0, (await queue.PreviewItemActionAsync(everything with { Selection = everything.Selection with { OrderingKey = "none" } })).Count);

        // Requeue the dead letters of one error text, then delete the other dead letters older than 30 s.
        var requeue = new StoredItemAction { Kind = StoredItemActionKind.Requeue, Selection = new() { State = StoredItemState.DeadLetter, ErrorContains = "SAID 3" } };
        var requeuePreview = await queue.PreviewItemActionAsync(requeue);
        Assert.Equal(260, requeuePreview.Count);
        Assert.Equal(new StoredItemActionResult(260, 0, false), await queue.ApplyItemActionAsync(requeue, requeuePreview.ConfirmToken));
        Assert.Equal(260, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 0 AND last_error LIKE '%said 3'"));

        var delete = new StoredItemAction { Kind = StoredItemActionKind.Delete, Selection = new() { State = StoredItemState.DeadLetter, ChangedUntil = DateTimeOffset.UtcNow.AddSeconds(-30) } };
        var deletePreview = await queue.PreviewItemActionAsync(delete);
        var expectedDeleted = await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 3 AND finished_at < now() - interval '30 seconds'");
        Assert.Equal(expectedDeleted, deletePreview.Count);
        Assert.Equal(deletePreview.Count, (await queue.ApplyItemActionAsync(delete, deletePreview.ConfirmToken)).Applied);

        // Run time: the scheduled items made due now become ready.
        var due = new StoredItemAction { Kind = StoredItemActionKind.SetRunAt, RunAt = DateTimeOffset.UtcNow.AddSeconds(-1), Selection = new() { State = StoredItemState.Scheduled } };
        var duePreview = await queue.PreviewItemActionAsync(due);
        Assert.Equal(10, duePreview.Count);
        Assert.Equal(10, (await queue.ApplyItemActionAsync(due, duePreview.ConfirmToken)).Applied);
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 5"));
    }

    [Fact]
    public async Task BulkCancel_WhileConsumersRun_LosesNothingAndRunsNothingTwice()
    {
        const int Count = 3000;
        var schema = await postgres.NewSchemaAsync();
        await postgres.ExecuteAsync($"CREATE TABLE {schema}.witness (item_id bigint NOT NULL, number integer NOT NULL)");
        using var started = new ManualResetEventSlim();
        var witness = NpgsqlDataSource.Create(postgres.ConnectionString);
        await using var _ = witness;
        var behavior = new Behavior
        {
            Handle = (item, context) =>
            {
                using var command = witness.CreateCommand($"INSERT INTO {schema}.witness VALUES ($1, $2)");
                command.Parameters.Add(new NpgsqlParameter<long> { TypedValue = context.ItemId });
                command.Parameters.Add(new NpgsqlParameter<int> { TypedValue = item.Number });
                command.ExecuteNonQuery();
                if (item.Number == 100)
                {
                    started.Set();
                }
            },
        };
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, "producer", keyed: true);
        // Keys 0..19 (one at a time per key); odd numbers are the selection.
        var ids = new List<long>();
        for (var i = 0; i < Count; i += 500)
        {
            ids.AddRange(await producer.Queue.EnqueueManyAsync(Enumerable.Range(i, 500).Select(n => new Notice(n, "k" + (n % 20)))));
        }

        await postgres.ExecuteAsync($"UPDATE {schema}.items SET payload = payload || jsonb_build_object('Odd', (payload->>'Number')::int % 2 = 1)");
        await using var a = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, "a", queue: static o => o.OrderingKey = static n => n.Key);
        await using var b = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior, "b", queue: static o => o.OrderingKey = static n => n.Key);
        Assert.True(started.Wait(QueueNode.Patience), "The consumers did not start.");

        // Under load: the consumers claim while the dry run counts and the action cancels in batches.
        var cancel = new StoredItemAction { Kind = StoredItemActionKind.Cancel, Selection = new() { State = StoredItemState.Ready, PayloadPath = "Odd", PayloadEquals = "true" } };
        var preview = await producer.Queue.PreviewItemActionAsync(cancel);
        var result = await producer.Queue.ApplyItemActionAsync(cancel, preview.ConfirmToken);
        Assert.True(result.Applied + result.Skipped <= preview.Count);

        using (var deadline = new CancellationTokenSource(QueueNode.Patience))
        {
            while (await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state IN (0, 1, 5)") > 0)
            {
                await Task.Delay(50, deadline.Token);
            }
        }

        var cancelled = (await postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id), ARRAY[]::bigint[]) FROM {schema}.items WHERE state = 4")).ToHashSet();
        var witnessed = await postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(item_id), ARRAY[]::bigint[]) FROM {schema}.witness");
        Assert.Equal(result.Applied, cancelled.Count);
        Assert.Equal(witnessed.Length, witnessed.Distinct().Count()); // nothing ran twice
        Assert.DoesNotContain(witnessed, cancelled.Contains); // nothing cancelled ran
        Assert.Equal(ids.Order(), witnessed.Concat(cancelled).Order()); // nothing lost: each item ran or was cancelled
        Assert.Equal(0, await postgres.ScalarAsync<long>($"SELECT count(*) FROM {schema}.items WHERE state = 4 AND (payload->>'Number')::int % 2 = 0"));
    }

    [Fact]
    public async Task HostileInput_IsRefusedNamingTheField_AndChangesNothing()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema);
        await postgres.ExecuteAsync($"INSERT INTO {schema}.items (queue, payload, state, run_at) SELECT 'notices', jsonb_build_object('Number', i), 0, now() FROM generate_series(1, 20) i");
        var before = await ChecksumAsync(schema);
        var queue = node.Queue;
        var ready = new StoredItemQuery { State = StoredItemState.Ready };
        var deadCursor = (await queue.SearchItemsAsync(new StoredItemQuery { State = StoredItemState.Ready, Limit = 1 })).NextCursor!;

        (StoredItemQuery Query, string Field)[] queries =
        [
            (new() { State = (StoredItemState)99 }, "State"),
            (ready with { Limit = 0 }, "Limit"),
            (ready with { Limit = 1_000_000 }, "Limit"),
            (ready with { Limit = -5 }, "Limit"),
            (ready with { PayloadPath = "a..b", PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = "$.a", PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = "a b", PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = "a\r\nb", PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = "{a,b}", PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = string.Join('.', Enumerable.Repeat("a", 17)), PayloadEquals = "x" }, "PayloadPath"),
            (ready with { PayloadPath = "a" }, "PayloadEquals"),
            (ready with { PayloadEquals = "a" }, "PayloadPath"),
            (ready with { ErrorContains = string.Empty }, "ErrorContains"),
            (ready with { ErrorContains = "a\0b" }, "ErrorContains"),
            (ready with { ErrorContains = "\ud800" }, "ErrorContains"),
            (ready with { OrderingKey = new string('k', 1025) }, "OrderingKey"),
            (ready with { EnqueuedSince = DateTimeOffset.UtcNow, EnqueuedUntil = DateTimeOffset.UtcNow.AddDays(-1) }, "EnqueuedSince"),
            (ready with { ChangedSince = DateTimeOffset.UnixEpoch, ChangedUntil = DateTimeOffset.UnixEpoch }, "ChangedSince"),
            (new() { State = StoredItemState.Running, ChangedSince = DateTimeOffset.UtcNow }, "ChangedSince"),
            (ready with { Cursor = "not-a-cursor" }, "Cursor"),
            (ready with { Cursor = "0.0.-5.1" }, "Cursor"),
            (new() { State = StoredItemState.DeadLetter, Cursor = deadCursor }, "Cursor"), // a ready cursor
        ];
        foreach (var (query, field) in queries)
        {
            var error = await Record.ExceptionAsync(() => queue.SearchItemsAsync(query));
            Assert.True(error is ArgumentException { ParamName: var name } && name == field, $"{query}: {error?.GetType().Name} {(error as ArgumentException)?.ParamName}");
            var action = new StoredItemAction { Kind = StoredItemActionKind.Cancel, Selection = query with { Cursor = null } };
            if (field != "Cursor")
            {
                Assert.Equal(field, (await Assert.ThrowsAsync<ArgumentException>(() => queue.PreviewItemActionAsync(action))).ParamName);
                Assert.Equal(field, (await Assert.ThrowsAsync<ArgumentException>(() => queue.ApplyItemActionAsync(action, "1.x"))).ParamName);
            }
        }

        (StoredItemAction Action, string Field)[] actions =
        [
            (new() { Kind = (StoredItemActionKind)42, Selection = ready }, "Kind"),
            (new() { Kind = StoredItemActionKind.Requeue, Selection = ready }, "State"),
            (new() { Kind = StoredItemActionKind.Delete, Selection = ready }, "State"),
            (new() { Kind = StoredItemActionKind.Cancel, Selection = ready with { State = StoredItemState.Running } }, "State"),
            (new() { Kind = StoredItemActionKind.SetPriority, Selection = ready }, "Priority"),
            (new() { Kind = StoredItemActionKind.SetPriority, Priority = 101, Selection = ready }, "Priority"),
            (new() { Kind = StoredItemActionKind.Cancel, Priority = 1, Selection = ready }, "Priority"),
            (new() { Kind = StoredItemActionKind.SetRunAt, Selection = ready }, "RunAt"),
            (new() { Kind = StoredItemActionKind.SetRunAt, RunAt = DateTimeOffset.UnixEpoch.AddTicks(-10), Selection = ready }, "RunAt"),
            (new() { Kind = StoredItemActionKind.SetRunAt, RunAt = DateTimeOffset.MinValue, Selection = ready }, "RunAt"),
        ];
        foreach (var (action, field) in actions)
        {
            Assert.Equal(field, (await Assert.ThrowsAsync<ArgumentException>(() => queue.PreviewItemActionAsync(action))).ParamName);
            Assert.Equal(field, (await Assert.ThrowsAsync<ArgumentException>(() => queue.ApplyItemActionAsync(action, "20.x"))).ParamName);
        }

        await Assert.ThrowsAsync<ArgumentNullException>(() => queue.SearchItemsAsync(null!));
        await Assert.ThrowsAsync<ArgumentNullException>(() => queue.ApplyItemActionAsync(new() { Kind = StoredItemActionKind.Cancel, Selection = ready }, null!));
        Assert.Equal(before, await ChecksumAsync(schema));
    }

    private Task<string> ChecksumAsync(string schema) =>
        postgres.ScalarAsync<string>($"SELECT md5(coalesce(string_agg(i::text, '|' ORDER BY id), '')) FROM {schema}.items i");

    /// <summary>Runs one page's statement under EXPLAIN ANALYZE as the queue's sessions run it (no sequential scans, a generic plan): rows its scans of the items table examined.</summary>
    private async Task<(long Examined, string Plan)> ExplainAsync(StorageSql sql, StoredItemQuery query, ItemCursor? cursor)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using (var settings = new NpgsqlCommand("SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan; SET jit = off", connection))
        {
            await settings.ExecuteNonQueryAsync();
        }

        await using var command = ItemSearchSql.Page(sql, "notices", query, cursor, query.Limit + 1, null, connection);
        command.CommandText = "EXPLAIN (ANALYZE, FORMAT JSON) " + command.CommandText;
        var json = (string)(await command.ExecuteScalarAsync())!;
        using var document = JsonDocument.Parse(json);
        return (PlanCost.Examined(document.RootElement[0].GetProperty("Plan")), json);
    }

    private sealed record Row(long Id, short State, int Priority, string? Key, DateTimeOffset EnqueuedAt, DateTimeOffset RunAt, DateTimeOffset? FinishedAt, string? Error, JsonElement Payload);

    private async Task<List<Row>> ReadRowsAsync(string schema)
    {
        await using var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT id, state, priority, ordering_key, enqueued_at, run_at, finished_at, last_error, payload::text FROM {schema}.items WHERE queue = 'notices'", connection);
        await using var reader = await command.ExecuteReaderAsync();
        var rows = new List<Row>();
        while (await reader.ReadAsync())
        {
            rows.Add(new Row(reader.GetInt64(0), reader.GetInt16(1), reader.GetInt16(2), reader.IsDBNull(3) ? null : reader.GetString(3),
                reader.GetFieldValue<DateTimeOffset>(4), reader.GetFieldValue<DateTimeOffset>(5), reader.IsDBNull(6) ? null : reader.GetFieldValue<DateTimeOffset>(6),
                reader.IsDBNull(7) ? null : reader.GetString(7), JsonDocument.Parse(reader.GetString(8)).RootElement.Clone()));
        }

        return rows;
    }

    /// <summary>What a search should find, in the state's order.</summary>
    private static IEnumerable<Row> Model(List<Row> rows, StoredItemQuery query, DateTimeOffset now)
    {
        var code = ItemSearchSql.Code(query.State);
        var found = rows.Where(r => r.State == code
            && (query.OrderingKey is null || r.Key == query.OrderingKey)
            && (query.EnqueuedSince is null || r.EnqueuedAt >= query.EnqueuedSince) && (query.EnqueuedUntil is null || r.EnqueuedAt < query.EnqueuedUntil)
            && (query.ChangedSince is null || (r.FinishedAt ?? r.RunAt) >= query.ChangedSince) && (query.ChangedUntil is null || (r.FinishedAt ?? r.RunAt) < query.ChangedUntil)
            && (query.ErrorContains is null || (r.Error?.Contains(query.ErrorContains, StringComparison.OrdinalIgnoreCase) ?? false))
            && (query.PayloadPath is null || Field(r.Payload, query.PayloadPath) == query.PayloadEquals));
        return query.State switch
        {
            StoredItemState.Ready => found.OrderByDescending(r => r.Priority).ThenBy(r => r.RunAt).ThenBy(r => r.Id),
            StoredItemState.Scheduled => found.OrderBy(r => r.RunAt).ThenBy(r => r.Id),
            StoredItemState.Running => found.OrderBy(r => r.Id),
            _ => found.OrderByDescending(r => r.FinishedAt).ThenByDescending(r => r.Id),
        };
    }

    private static string? Field(JsonElement payload, string path)
    {
        foreach (var segment in path.Split('.'))
        {
            if (payload.ValueKind != JsonValueKind.Object || !payload.TryGetProperty(segment, out payload))
            {
                return null;
            }
        }

        return payload.ValueKind switch
        {
            JsonValueKind.String => payload.GetString(),
            JsonValueKind.Null => null,
            _ => payload.GetRawText(),
        };
    }
}
