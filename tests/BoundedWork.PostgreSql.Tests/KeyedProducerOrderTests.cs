using System.Collections.Concurrent;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql.Internal;
using BoundedWork.PostgreSql.TestConsumer;
using Npgsql;
using NpgsqlTypes;

namespace BoundedWork.PostgreSql.Tests;

/// <summary>
/// Producers of one ordering key in overlapping transactions. An item's id is drawn at its insert, its row becomes
/// visible at its producer's commit; the claims decide a key's order by id. Before the enqueue took its key's lock
/// first, a producer that inserted later (a higher id) but committed first had its item claimed while the older item
/// was still invisible: the key's items started out of order, and a claim in flight at the older item's commit let
/// M + 1 of the key run. Now a producer of a key waits, before its id is drawn, until the key's earlier producers have
/// committed or rolled back: a key's ids follow its commit order.
/// </summary>
[Collection(PostgresCollection.Name)]
public sealed class KeyedProducerOrderTests(PostgresFixture postgres)
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(60);

    /// <summary>
    /// End to end, witnessed by the handlers: producer A enqueues item 1 of key k in its transaction and holds it open;
    /// M more producers each enqueue the next item of k in their own and commit (or, now, wait for A and for each
    /// other); A commits. With M = 1 item 1 must start first and never while item 2 runs; for any M, no item may start
    /// while M older items of its key have not ended, nor more than M run at once.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    public async Task OverlappingProducersOfAKey_TheLaterInsertCommitsFirst_ItemsStartInCommitOrder_AtMostMAtOnce(int perKey)
    {
        var schema = await postgres.NewSchemaAsync();
        var witness = new ConcurrentQueue<(int Number, bool Start)>();
        using var release = new ManualResetEventSlim();
        var behavior = new Behavior
        {
            Handle = (notice, _) =>
            {
                witness.Enqueue((notice.Number, true));
                Assert.True(release.Wait(Patience), "the test released the handlers");
                witness.Enqueue((notice.Number, false));
            },
        };
        await using (await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true))
        {
            // The schema exists: the limit is in place before the consumer starts.
            await ClusterLimitSql.SetLimitsAsync(postgres, schema, perKey: perKey);
        }

        await using var node = await QueueNode.StartAsync(postgres.ConnectionString, schema, behavior,
            queue: static o => o.OrderingKey = static n => n.Key, executor: static o => o.WorkerCount = 4);

        await using var a = await OpenAsync();
        await using var aTransaction = await a.BeginTransactionAsync();
        await node.Queue.EnqueueAsync(new Notice(1, "k"), aTransaction);

        var others = new List<(NpgsqlConnection Connection, Task Enqueue)>();
        for (var number = 2; number <= perKey + 1; number++)
        {
            var connection = await OpenAsync();
            var item = new Notice(number, "k");
            var enqueue = Task.Run(async () =>
            {
                await using var transaction = await connection.BeginTransactionAsync();
                await node.Queue.EnqueueAsync(item, transaction);
                await transaction.CommitAsync();
            });
            await WaitUntilAsync(async () => enqueue.IsCompleted || await WaitsOnLockAsync(connection.ProcessID), enqueue, $"item {number}'s enqueue is committed or waits");
            others.Add((connection, enqueue));
        }

        if (others.All(o => o.Enqueue.IsCompleted))
        {
            // The newer items are committed while item 1 is not: the consumer may take them now, as it would in production.
            await behavior.WaitUntilAsync(() => witness.Count(e => e.Start) == perKey, "the newer items start");
        }

        await aTransaction.CommitAsync();
        foreach (var (connection, enqueue) in others)
        {
            await enqueue;
            await connection.DisposeAsync();
        }

        await behavior.WaitUntilAsync(() => !witness.IsEmpty, "an item starts");
        release.Set();
        await behavior.WaitUntilAsync(() => behavior.Deliveries.Count == perKey + 1, "every item ran");

        var events = witness.ToArray();
        var starts = events.Where(e => e.Start).Select(e => e.Number).ToArray();
        if (perKey == 1)
        {
            Assert.Equal([1, 2], starts); // A committed first: its item starts first
        }

        Assert.True(MaxUnfinishedElders(events) < perKey, $"An item started while {perKey} older items of its key had not ended; starts {string.Join(", ", starts)}.");
        Assert.True(MaxOverlap(events) <= perKey, $"More than {perKey} items of the key ran at once; starts {string.Join(", ", starts)}.");
    }

    /// <summary>
    /// The claim statements themselves, with a claim in flight at the older item's commit: M + 1 producers of one key,
    /// the first holding its transaction open while the others insert and commit (or, now, wait for it); a claim takes
    /// what it sees and is held (by a trigger waiting on a lock the test holds) before it writes; the first producer
    /// commits; a second claim runs, then the held one commits. At most M items of the key run, claimed oldest first,
    /// and the key's ids follow its commit order.
    /// </summary>
    [Theory]
    [InlineData(false, 1)]
    [InlineData(true, 1)]
    [InlineData(true, 2)]
    public async Task OverlappingProducersOfAKey_AClaimInFlightAtTheOlderCommit_NeverMoreThanMRun(bool perKeyClaim, int perKey)
    {
        var claim = await KeyedClaim.CreateAsync(postgres);
        var schema = claim.Sql.Schema;
        var gate = Random.Shared.NextInt64(1, long.MaxValue);
        await postgres.ExecuteAsync($"""
            CREATE FUNCTION {schema}.pause_claim() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF current_setting('test.pause', true) = 'on' THEN PERFORM pg_advisory_xact_lock({gate}); END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER pause_claim BEFORE UPDATE ON {claim.Items} FOR EACH ROW
                WHEN (NEW.state = 1 AND OLD.state = 0) EXECUTE FUNCTION {schema}.pause_claim();
            """);

        var committed = new ConcurrentQueue<long>();
        var first = await Producer.StartAsync(claim, committed);
        var firstId = await first.InsertAsync();
        var others = new List<(Producer Producer, Task<long> Insert)>();
        for (var i = 0; i < perKey; i++)
        {
            var producer = await Producer.StartAsync(claim, committed);
            var insert = Task.Run(async () =>
            {
                var id = await producer.InsertAsync();
                await producer.CommitAsync(id);
                return id;
            });
            await WaitUntilAsync(async () => insert.IsCompleted || await WaitsOnLockAsync(producer.Connection.ProcessID), insert, $"producer {i + 2} committed or waits");
            others.Add((producer, insert));
        }

        await using var gateHolder = await claim.OpenAsync();
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_lock({gate})");
        await using var held = await claim.OpenAsync();
        await ExecuteAsync(held, "SET test.pause = 'on'");
        var heldClaim = KeyedRequeueRaceTests.ClaimAsync(claim, perKeyClaim, perKey, perKey, held);
        await WaitUntilAsync(async () => heldClaim.IsCompleted || await WaitsOnLockAsync(held.ProcessID), heldClaim, "the first claim is done or waits at its trigger");

        await first.CommitAsync(firstId);
        foreach (var (_, insert) in others)
        {
            await insert;
        }

        var second = await KeyedRequeueRaceTests.ClaimAsync(claim, perKeyClaim, perKey, perKey + 1, connection: null);
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_unlock({gate})");
        var firstClaim = await heldClaim;

        var running = await claim.RunningAsync();
        Assert.True(running.Length <= perKey,
            $"M = {perKey}: running {string.Join(", ", running)} (the held claim took {string.Join(", ", firstClaim)}, the second {string.Join(", ", second)}); committed in the order {string.Join(", ", committed)}.");
        Assert.Equal(committed.Order(), committed); // a key's ids follow its commit order
        Assert.Equal(committed.Take(running.Length), running); // the oldest run

        foreach (var (producer, _) in others)
        {
            await producer.DisposeAsync();
        }

        await first.DisposeAsync();
    }

    /// <summary>
    /// Several producers of a few keys with random overlapping transactions (each inserts, then commits after a random
    /// number of the others' steps) while claims run between the steps, with M = 1 and 2: after every step, at most M
    /// items of a key run, every key's ids follow the order their producers committed, and its items are claimed in it.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    public async Task RandomOverlappingProducers_ClaimsBetweenTheirSteps_AtMostMPerKey_ClaimedInCommitOrder(int perKey)
    {
        var seed = Random.Shared.Next();
        var random = new Random(seed);
        var claim = await KeyedClaim.CreateAsync(postgres);
        var committed = new ConcurrentQueue<long>();
        var claimed = new List<long>();
        var keys = new[] { "x", "y" };
        for (var round = 0; round < 6; round++)
        {
            // Up to four producers, each (in a random order) inserts one item of a random key and later commits; a
            // producer whose key another open producer holds waits for it, and the test goes on with the others.
            var producers = new List<(Producer Producer, Task<long> Insert, string Key)>();
            var steps = Enumerable.Range(0, random.Next(2, 5)).SelectMany(p => new[] { (p, Commit: false), (p, Commit: true) }).ToList();
            var order = steps.OrderBy(_ => random.Next()).ToList();
            var started = new Dictionary<int, (Producer Producer, Task<long> Insert)>();
            var pending = new List<(int P, bool Commit)>();
            foreach (var step in order)
            {
                pending.Add(step);
                foreach (var (p, commit) in pending.ToList())
                {
                    if (!commit && !started.ContainsKey(p))
                    {
                        var producer = await Producer.StartAsync(claim, committed, keys[random.Next(keys.Length)]);
                        var insert = producer.InsertAsync();
                        await WaitUntilAsync(async () => insert.IsCompleted || await WaitsOnLockAsync(producer.Connection.ProcessID), insert, "the insert is done or waits");
                        started[p] = (producer, insert);
                        pending.Remove((p, commit));
                    }
                    else if (commit && started.TryGetValue(p, out var s) && s.Insert.IsCompleted)
                    {
                        await s.Producer.CommitAsync(await s.Insert);
                        pending.Remove((p, commit));
                    }
                }

                claimed.AddRange(await KeyedRequeueRaceTests.ClaimAsync(claim, perKeyClaim: perKey > 1, perKey, 10, connection: null));
                Assert.True(await claim.MaxRunningPerKeyAsync() <= perKey, $"seed {seed}: more than {perKey} of a key running.");
                await claim.CompleteAsync([.. (await claim.RunningAsync()).Where(_ => random.Next(2) == 0), 0]);
            }

            // Whatever is left: commit as the inserts come through (each waits only for an open producer of its key).
            while (started.Values.Any(s => !s.Producer.Committed))
            {
                foreach (var s in started.Values.Where(s => !s.Producer.Committed && s.Insert.IsCompleted))
                {
                    await s.Producer.CommitAsync(await s.Insert);
                }

                var open = started.Values.Where(s => !s.Producer.Committed).Select(s => s.Insert).ToArray();
                if (open.Length > 0)
                {
                    await Task.WhenAny(open).WaitAsync(Patience);
                }
            }

            foreach (var s in started.Values)
            {
                await s.Producer.DisposeAsync();
            }
        }

        for (var drain = 0; drain < 100 && claimed.Count < committed.Count; drain++)
        {
            claimed.AddRange(await KeyedRequeueRaceTests.ClaimAsync(claim, perKeyClaim: perKey > 1, perKey, 10, connection: null));
            Assert.True(await claim.MaxRunningPerKeyAsync() <= perKey, $"seed {seed}: more than {perKey} of a key running.");
            await claim.CompleteAsync([.. await claim.RunningAsync(), 0]);
        }

        var keyOf = await KeysAsync(claim);
        foreach (var key in keys)
        {
            var byCommit = committed.Where(id => keyOf[id] == key).ToList();
            var byClaim = claimed.Where(id => keyOf[id] == key).ToList();
            Assert.True(byCommit.SequenceEqual(byCommit.Order()), $"seed {seed}, key {key}: committed {string.Join(", ", byCommit)}, not in id order.");
            Assert.True(byCommit.SequenceEqual(byClaim), $"seed {seed}, key {key}: committed {string.Join(", ", byCommit)}, claimed {string.Join(", ", byClaim)}.");
        }
    }

    /// <summary>
    /// Every enqueue path of a keyed item (one item, with an idempotency key, in bulk) waits while a transaction that
    /// enqueued an item of its key is open, and draws its ids after that transaction's; items of other keys and
    /// unkeyed items do not wait. A second bulk enqueue of the same keys in the other order waits too (no deadlock:
    /// a bulk enqueue takes its keys' locks in one order).
    /// </summary>
    [Fact]
    public async Task KeyedEnqueues_WaitForAnOpenTransactionThatEnqueuedTheirKey_OthersDoNot()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var producer = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        var queue = producer.Queue;
        await using var a = await OpenAsync();
        await using var aTransaction = await a.BeginTransactionAsync();
        var held = await queue.EnqueueManyAsync([new Notice(1, "b"), new Notice(2, "a"), new Notice(3)], aTransaction);

        // Not waiting: another key, no key.
        Assert.True(await queue.EnqueueWithIdAsync(new Notice(4, "c")) > held[^1]);
        await queue.EnqueueAsync(new Notice(5));

        var one = queue.EnqueueWithIdAsync(new Notice(6, "a"));
        var idempotent = queue.EnqueueAsync(new Notice(7, "b"), new EnqueueOptions { IdempotencyKey = "seven" });
        var many = queue.EnqueueManyAsync([new Notice(8, "a"), new Notice(9, "b")]);
        var waiting = Task.WhenAll(one, idempotent, many);
        await WaitUntilAsync(
            async () => await postgres.ScalarAsync<long>("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == 3,
            waiting,
            "the three enqueues of keys a and b wait");
        Assert.False(one.IsCompleted || idempotent.IsCompleted || many.IsCompleted);

        await aTransaction.CommitAsync();
        await waiting.WaitAsync(Patience);
        Assert.True(await one > held[1]);
        Assert.True((await idempotent).ItemId > held[0]);
        Assert.True((await many)[0] > held[1] && (await many)[1] > held[0]);
    }

    /// <summary>
    /// A dead letter of key k requeued while a producer of k is in flight: the producer commits after the requeue's
    /// statement took its snapshot (held there by a trigger), so the requeue's fence, which makes the key's newer ready
    /// items wait, did not see the new item; a claim that sees the new item but not the requeue takes it and is held;
    /// the requeue commits; a second claim sees the requeued item and no running item of its key. Before the requeue
    /// took its keys' locks first, both ran. Now the requeue waits for the producer before its snapshot, and its fence
    /// meets the held claim's row.
    /// </summary>
    [Fact]
    public async Task RequeuedDeadLetter_WhileAProducerOfItsKeyIsInFlight_NeverTwoOfTheKeyRun()
    {
        var schema = await postgres.NewSchemaAsync();
        await using var node = await QueueNode.StartProducerAsync(postgres.ConnectionString, schema, keyed: true);
        var sql = new StorageSql(schema);
        var requeueGate = Random.Shared.NextInt64(1, int.MaxValue);
        var claimGate = Random.Shared.NextInt64(1, long.MaxValue);
        await postgres.ExecuteAsync($"""
            CREATE FUNCTION {schema}.pause_requeue() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock({requeueGate}); RETURN NEW; END $$;
            CREATE TRIGGER pause_requeue BEFORE UPDATE ON {sql.Items} FOR EACH ROW
                WHEN (NEW.state = 0 AND OLD.state = 3) EXECUTE FUNCTION {schema}.pause_requeue();
            CREATE FUNCTION {schema}.pause_claim() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF current_setting('test.pause', true) = 'on' THEN PERFORM pg_advisory_xact_lock({claimGate}); END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER pause_claim BEFORE UPDATE ON {sql.Items} FOR EACH ROW
                WHEN (NEW.state = 1 AND OLD.state = 0) EXECUTE FUNCTION {schema}.pause_claim();
            """);
        var dead = await postgres.ScalarAsync<long>(
            $"INSERT INTO {sql.Items} (queue, payload, ordering_key, state, finished_at, attempts) VALUES ('notices', '{{}}', 'k', 3, now(), 1) RETURNING id");

        await using var producer = await OpenAsync();
        await using var producerTransaction = await producer.BeginTransactionAsync();
        var newer = await node.Queue.EnqueueAsync(new Notice(2, "k"), producerTransaction);

        await using var gateHolder = await OpenAsync();
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_lock({requeueGate}), pg_advisory_lock({claimGate})");
        var requeue = node.Queue.RequeueDeadLettersAsync(DeadLetterSelection.ByIds([dead]));
        await WaitUntilAsync(async () => await postgres.ScalarAsync<long>("SELECT count(*) FROM pg_locks WHERE NOT granted") > 0, requeue, "the requeue waits");
        await producerTransaction.CommitAsync();
        await WaitUntilAsync(
            async () => await postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = {requeueGate}") > 0,
            requeue,
            "the requeue's statement waits at its trigger");

        await using var held = await OpenAsync();
        await ExecuteAsync(held, "SET test.pause = 'on'");
        var heldClaim = ClaimAsync(sql, 1, held);
        await WaitUntilAsync(async () => heldClaim.IsCompleted || await WaitsOnLockAsync(held.ProcessID), heldClaim, "the first claim is done or waits at its trigger");
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_unlock({requeueGate})");
        await WaitUntilAsync(
            async () => requeue.IsCompleted || await postgres.ScalarAsync<long>("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype <> 'advisory'") > 0,
            requeue,
            "the requeue is done or waits for a row");

        var second = await ClaimAsync(sql, 2, connection: null);
        await ExecuteAsync(gateHolder, $"SELECT pg_advisory_unlock({claimGate})");
        var first = await heldClaim;
        Assert.Equal(1, await requeue);

        var running = await postgres.ScalarAsync<long[]>($"SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM {sql.Items} WHERE state = 1");
        Assert.True(running.Length <= 1,
            $"Running {string.Join(", ", running)} of key k (the dead letter {dead}, the newer item {newer}; the held claim took {string.Join(", ", first)}, the second {string.Join(", ", second)}).");
    }

    /// <summary>One claim of the queue <c>notices</c> with the ordering rule of every keyed queue (<see cref="StorageSql.Claim"/>); the ids it took.</summary>
    private async Task<List<long>> ClaimAsync(StorageSql sql, int count, NpgsqlConnection? connection)
    {
        await using var own = connection is null ? await OpenAsync() : null;
        await using var command = new NpgsqlCommand(sql.Claim, connection ?? own)
        {
            Parameters =
            {
                new NpgsqlParameter<string> { TypedValue = "notices" },
                new NpgsqlParameter<int> { TypedValue = count },
                new NpgsqlParameter<string> { TypedValue = "test" },
                new NpgsqlParameter<TimeSpan> { TypedValue = TimeSpan.FromHours(1) },
                new NpgsqlParameter<long> { TypedValue = 0 }, // the settings version (no row): claims go ahead
                new NpgsqlParameter<int> { TypedValue = 0 },
            },
        };
        var ids = new List<long>();
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            if (!reader.IsDBNull(0))
            {
                ids.Add(reader.GetInt64(0));
            }
        }

        return ids;
    }

    /// <summary>The most items older than an item (by number, its commit order) that had not ended when it started.</summary>
    private static int MaxUnfinishedElders((int Number, bool Start)[] events)
    {
        var ended = new HashSet<int>();
        var most = 0;
        foreach (var (number, start) in events)
        {
            if (start)
            {
                most = Math.Max(most, Enumerable.Range(1, number - 1).Count(older => !ended.Contains(older)));
            }
            else
            {
                ended.Add(number);
            }
        }

        return most;
    }

    /// <summary>The most items of one key that ran at once, from the handlers' own start and end records.</summary>
    private static int MaxOverlap((int Number, bool Start)[] events)
    {
        int running = 0, most = 0;
        foreach (var (_, start) in events)
        {
            running += start ? 1 : -1;
            most = Math.Max(most, running);
        }

        return most;
    }

    private static async Task<Dictionary<long, string>> KeysAsync(KeyedClaim claim)
    {
        var keys = new Dictionary<long, string>();
        await using var connection = await claim.OpenAsync();
        await using var command = new NpgsqlCommand($"SELECT id, ordering_key FROM {claim.Items}", connection);
        await using var reader = await command.ExecuteReaderAsync();
        while (await reader.ReadAsync())
        {
            keys[reader.GetInt64(0)] = reader.GetString(1);
        }

        return keys;
    }

    private async Task<NpgsqlConnection> OpenAsync()
    {
        var connection = new NpgsqlConnection(postgres.ConnectionString);
        await connection.OpenAsync();
        return connection;
    }

    private async Task<bool> WaitsOnLockAsync(int pid) =>
        await postgres.ScalarAsync<long>($"SELECT count(*) FROM pg_locks WHERE pid = {pid} AND NOT granted") > 0;

    /// <summary>Polls the database until the condition holds (no timing guess: it waits for a state); fails if the task ends with an error first.</summary>
    private static async Task WaitUntilAsync(Func<Task<bool>> condition, Task task, string what)
    {
        var deadline = DateTime.UtcNow + Patience;
        while (!await condition())
        {
            if (task.IsFaulted)
            {
                await task;
            }

            Assert.True(DateTime.UtcNow < deadline, $"Waited {Patience} for: {what}.");
            await Task.Delay(10);
        }
    }

    private static async Task ExecuteAsync(NpgsqlConnection connection, string sql)
    {
        await using var command = new NpgsqlCommand(sql, connection);
        await command.ExecuteNonQueryAsync();
    }

    /// <summary>A producer's own connection and transaction, inserting one item of its key with the library's enqueue statement.</summary>
    private sealed class Producer : IAsyncDisposable
    {
        private readonly KeyedClaim _claim;
        private readonly ConcurrentQueue<long> _committed;
        private readonly string _key;
        private NpgsqlTransaction? _transaction;

        private Producer(KeyedClaim claim, ConcurrentQueue<long> committed, string key, NpgsqlConnection connection)
        {
            _claim = claim;
            _committed = committed;
            _key = key;
            Connection = connection;
        }

        public NpgsqlConnection Connection { get; }

        public bool Committed { get; private set; }

        public static async Task<Producer> StartAsync(KeyedClaim claim, ConcurrentQueue<long> committed, string key = "k")
        {
            var producer = new Producer(claim, committed, key, await claim.OpenAsync());
            producer._transaction = await producer.Connection.BeginTransactionAsync();
            return producer;
        }

        public async Task<long> InsertAsync()
        {
            await using var command = new NpgsqlCommand(_claim.Sql.Enqueue, Connection, _transaction)
            {
                Parameters =
                {
                    new NpgsqlParameter<string> { TypedValue = KeyedClaim.Queue },
                    new NpgsqlParameter<string> { NpgsqlDbType = NpgsqlDbType.Jsonb, TypedValue = "{}" },
                    new NpgsqlParameter<string> { NpgsqlDbType = NpgsqlDbType.Text, TypedValue = _key },
                    new NpgsqlParameter<short> { TypedValue = 0 },
                    new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.TimestampTz, Value = DBNull.Value },
                    new NpgsqlParameter<TimeSpan> { NpgsqlDbType = NpgsqlDbType.Interval, TypedValue = TimeSpan.Zero },
                    new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Text, Value = DBNull.Value },
                    new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Text, Value = DBNull.Value },
                    new NpgsqlParameter { NpgsqlDbType = NpgsqlDbType.Text, Value = DBNull.Value }, // no tenant
                },
            };
            return (long)(await command.ExecuteScalarAsync())!;
        }

        /// <summary>
        /// Records the item's id in the commit order, and commits. Recorded just before the commit, while the
        /// transaction still holds its key's lock: the next producer of the key cannot get past its insert until this
        /// commit has released it, so the record is the key's commit order. (Recorded after the commit returned, the
        /// next producer, woken by the commit on the server, could record first while this client still read the
        /// commit's answer.)
        /// </summary>
        public async Task CommitAsync(long id)
        {
            _committed.Enqueue(id);
            await _transaction!.CommitAsync();
            Committed = true;
        }

        public async ValueTask DisposeAsync()
        {
            if (_transaction is not null)
            {
                await _transaction.DisposeAsync();
            }

            await Connection.DisposeAsync();
        }
    }
}
