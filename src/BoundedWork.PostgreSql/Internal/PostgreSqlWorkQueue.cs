using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using BoundedWork.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>
/// A typed work queue stored in PostgreSQL. Producers insert rows (and notify); each node claims ready rows with
/// <c>FOR UPDATE SKIP LOCKED</c>, as many as its executor has room for, runs each on a worker through the queue's Polly
/// pipeline, and writes the outcome (completed, stored retry, dead letter) through the <see cref="OutcomeWriter"/>.
/// </summary>
/// <remarks>
/// Loops, each on a dedicated thread with synchronous single-statement I/O (so they go on while the ThreadPool is
/// starved), and each retrying with backoff when the database is unreachable: claiming
/// (woken by notifications, local enqueues and written outcomes, else every poll interval or when the next scheduled
/// item falls due; it also makes due scheduled items ready and returns expired leases to ready), listening, writing
/// outcomes, notifying the other nodes (<see cref="Notifier"/>), renewing this node's leases, reading statistics
/// plus cleanup, and the cluster heartbeat (this node's row, the fleet-wide settings: <see cref="ClusterNode"/>).
/// </remarks>
internal sealed partial class PostgreSqlWorkQueue<T> : IWorkQueueStorage<T>, IPostgreSqlWorkQueue<T>, IClaimLoopHost, INotificationListenerHost, ITenantOutcomeSource, IDisposable
{
    // The life of a delivery (the invariants cited are numbered in docs/durable-invariants.md).
    //
    // Claim (ClaimLoop, on its own thread: the claim cadence and the wake-ups are its own). The loop books room for a
    // claim in the node's room (NodeRoom, I5), takes cluster permits and tokens for it (ClusterPermits, I4), and runs
    // one claim statement (the plain claim, or the per-key claim under max_running_per_key above one, I1). Each
    // claimed row is held (Hold): counted by the room, its lease kept (LeaseBook, I7), counted as running for its key
    // (KeyBook, I3), then started (Execute); then the room is unbooked. Items claimed beyond the node's permits wait
    // in the permits' reserve until a permit frees (I4, Apply).
    //
    // Run. The executor runs the delivery on a worker (Run): under a start rate it first spends a start token
    // (ClusterPermits.Starting). Its outcome is posted (Post): the permit is free at once (and goes to the oldest
    // reserved item), the key book starts the key's prefetched item at a final end (I3), and the outcome goes to the
    // writer (OutcomeWriter).
    //
    // Outcome and hand-off. The writer writes outcomes in batches; under a per-key limit above one, the same
    // transaction claims the next items of the finished keys (the hand-off: HandOffPlanner plans it from the room,
    // the key book and the permits, I2 and I6). Once an outcome is written, the delivery is no longer held: its lease
    // is dropped and the room freed (OnOutcomesSettled), and the claim loop is woken.
    //
    // Locks: the room's (booked room), the key book's (per-key counts and prefetched items), the permits' (grant,
    // counts, reserve); the claim loop has none (its state is its thread's own). Only one pair is ever nested: the key book's, then the permits' (asserted in Debug at the key
    // book). None is held while a handler, a logger or the database runs; the held count and the leases are
    // lock-free (touched per item).
    /// <summary>The longest idempotency key, in characters; far below what PostgreSQL's unique index takes.</summary>
    private const int MaxIdempotencyKeyLength = 256;

    /// <summary>The longest ordering key, in characters: at most 1,536 bytes in UTF-8, within what a B-tree index entry takes (about 2,700 bytes).</summary>
    private const int MaxOrderingKeyLength = 512;

    /// <summary>The earliest time to run at the row stores (<see cref="StoredRunAt"/>).</summary>
    private static readonly DateTimeOffset EarliestRunAt = DateTimeOffset.MinValue.AddTicks(TimeSpan.TicksPerMicrosecond);

    /// <summary>How many times a keyed enqueue runs its statement when another transaction commits or deletes the row that holds its key meanwhile.</summary>
    private const int MaxIdempotentInserts = 3;

    /// <summary>The longest a stopping node waits for its last outcomes to be written, whatever the host's deadline.</summary>
    private static readonly TimeSpan OutcomeFlushGrace = TimeSpan.FromSeconds(5);

    private const string NotifyLoop = "notifying";

    /// <summary>
    /// Run once on each of the queue's pooled physical connections (see <see cref="CreateDataSource"/>): one statement,
    /// never two. Npgsql sends the statements after the first of a synchronous multi-statement command from the
    /// ThreadPool, so under a starved pool two statements here would hang every synchronous open of a new connection.
    /// Index scans only, generic plans (planned once per connection), and no JIT compilation: the queue's statements
    /// read a few rows each, but a generic plan's estimates over a deep backlog can pass <c>jit_above_cost</c>, and
    /// PostgreSQL compiles a plan's expressions again at every execution (0.1 to 1.4 s for the per-key claim, against
    /// about a millisecond to run it).
    /// </summary>
    internal const string SessionSettings =
        "SELECT set_config('enable_seqscan', 'off', false), set_config('plan_cache_mode', 'force_generic_plan', false), set_config('jit', 'off', false)";

    private static readonly Action<StoredItem> s_run = static item => item.Owner.Run(item);

    private readonly PostgreSqlWorkQueueOptions<T> _options;
    private readonly JsonTypeInfo<T> _json;
    private readonly WorkQueueStorageContext<T> _context;
    private readonly ILogger _logger;
    /// <summary>The pool of the queue's own threads and of the synchronous enqueue: used synchronously only, its sockets complete inline (<see cref="InlineSocketCompletions"/>).</summary>
    private readonly NpgsqlDataSource _dataSource;

    /// <summary>Gets the connection pool of the queue's threads and of <c>TryEnqueue</c> (for tests).</summary>
    internal NpgsqlDataSource ThreadsDataSource => _dataSource;

    /// <summary>The node's threads that use the threads' pool when it consumes: outcomes, claims, leases, maintenance, the notifier and the cluster loop.</summary>
    internal const int ConsumingThreadsUsingThePool = 6;

    /// <summary>The node's threads that use the threads' pool when it only produces: outcomes, maintenance and the notifier.</summary>
    internal const int ProducingThreadsUsingThePool = 3;

    /// <summary>The node's threads started so far that use the threads' pool, by loop name (for tests: checked against the counts above).</summary>
    private readonly List<string> _threadsUsingThePool = [];

    /// <summary>Gets the node's started threads that use the threads' pool, by loop name (for tests).</summary>
    internal IReadOnlyList<string> ThreadsUsingThePool
    {
        get
        {
            lock (_threadsUsingThePool)
            {
                return [.. _threadsUsingThePool];
            }
        }
    }

    /// <summary>The blocking producers (<c>TryEnqueue</c> callers) whose connections <see cref="WarmThreadsPool"/> opens ahead.</summary>
    internal const int BlockingProducersWarmed = 2;

    /// <summary>The pool of the asynchronous API (enqueues, the cluster view, dead letters, the schema at start).</summary>
    private readonly NpgsqlDataSource _asyncSource;
    private readonly NpgsqlDataSource _listenerSource;
    private readonly StorageSql _sql;
    private readonly ClaimStatements _claims;
    private readonly ItemStatements _statements;
    private readonly StorageHealth _health;

    /// <summary>Gets this node's outcomes per tenant (the storage's meter reads them).</summary>
    public TenantOutcomes TenantOutcomes { get; }

    /// <summary>This node's view of the queue's cluster limits: which claim it runs, and what its last claim held back.</summary>
    private readonly ClusterPermits _permits;
    private readonly OutcomeWriter _outcomes;
    private readonly Notifier _notifier;

    /// <summary>The claim loop: the claim cadence, its wake-ups, and the claims themselves (I4, I5).</summary>
    private readonly ClaimLoop _claimLoop;
    private readonly NotificationListener _listener;
    private readonly CancellationTokenSource _claiming = new();
    private readonly CancellationTokenSource _background = new();
    private readonly CancellationTokenSource _abandonOutcomes = new();
    private readonly List<StorageThread> _claimThreads = [];
    private readonly List<StorageThread> _backgroundThreads = [];

    /// <summary>The deliveries this node holds: their leases (renewed by the heartbeat) and, until their outcome is posted, the items (I7).</summary>
    private readonly LeaseBook _leases = new();
    private readonly LeaseKeeper _leaseKeeper;
    private StorageThread? _outcomeThread;
    private BoundedExecutor? _executor;

    /// <summary>The node's room: the deliveries it holds and the room its claims in flight booked, against its claim limit (I5).</summary>
    private readonly NodeRoom _room;

    /// <summary>The per-key book: what this node runs of each key, and the item it holds prefetched for a key (I3).</summary>
    private readonly KeyBook _keys;

    /// <summary>The hand-off planner: what a claim in an outcome's transaction may take, and what becomes of its items (I2, I6).</summary>
    private readonly HandOffPlanner _handOff;
    /// <summary>
    /// The handlers of this queue running on this node now: deliveries whose handler has started and not ended (the
    /// held deliveries less those queued, reserved or with their outcome waiting for the writer). Reported by the heartbeat.
    /// </summary>
    private int _handlersRunning;
    private int _disposed;
    private WorkQueueStorageStatistics _statistics = new() { IsAvailable = false, LastError = "not started", ReadAt = DateTimeOffset.MinValue };

    public PostgreSqlWorkQueue(WorkQueueStorageContext<T> context, PostgreSqlWorkQueueOptions<T> options, string connectionString, JsonTypeInfo<T> json, IServiceProvider services)
    {
        Name = context.QueueName;
        DeliveryDescriptionPrefix = $"{context.HandlerName}.Handle({typeof(T).Name}";
        _context = context;
        _options = options;
        _json = json;
        var loggers = services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance;
        _logger = loggers.CreateLogger(PostgreSqlLog.Category);
        _dataSource = CreateDataSource(connectionString, Name, SessionUse.Threads);
        _asyncSource = CreateDataSource(connectionString, Name + " async", SessionUse.Async);
        _listenerSource = CreateDataSource(connectionString, Name + " listener", SessionUse.Listener);
        _sql = new StorageSql(options.Schema);
        _claims = new ClaimStatements(_sql);
        _statements = new ItemStatements(_sql);
        TenantOutcomes = new TenantOutcomes(_options.TenantSeriesLimit);
        _health = new StorageHealth(() =>
        {
            _dataSource.Clear();
            _asyncSource.Clear();
        });
        _permits = new ClusterPermits(options.TimeProvider);
        _room = new NodeRoom(ClaimLimit);
        _keys = new KeyBook(_permits);
        _handOff = new HandOffPlanner(_room, _keys, _permits);
        NodeId = $"{Environment.MachineName}:{Environment.ProcessId}:{Guid.NewGuid():N}"[..^24];
        _notifier = new Notifier(TryNotify, options.MaxReconnectDelay);
        _outcomes = new OutcomeWriter(_dataSource, _sql, Name, NodeId, options.CompletedRetention == TimeSpan.Zero, _logger, _health, options.MaxReconnectDelay, OnOutcomesSettled, _notifier.Signal, this);
        _claimLoop = new ClaimLoop(this, new ClaimLoopSettings(Name, NodeId, options.PollInterval, options.LeaseDuration, options.NodeHeartbeatInterval, options.TimeProvider),
            _room, _permits, _claims, _dataSource, _logger, _outcomes);
        _listener = new NotificationListener(this, _listenerSource, _sql, Name);
        _pauses = new FleetPauses(Name, _asyncSource, () => ClusterStatements, _sql.SettingsChannel, _sql.NotifyChannel, options.TimeProvider, _logger, _settingsChanged.Set, _claimLoop.Wake);
        _leaseKeeper = new LeaseKeeper(_dataSource, _claims.Heartbeat, _leases, new HeartbeatParameters(Name, NodeId, options.LeaseDuration, [], []), _health, _logger, OnCancellationRequested);
    }

    public string Name { get; }

    /// <summary>Gets the start of every delivery's description for operators: <c>Shop.LedgerHandler.Handle(PaymentNotice</c> (<see cref="StoredItem.WorkDescription"/>).</summary>
    public string DeliveryDescriptionPrefix { get; }

    public string QueueName => Name;

    public string StorageKind => "PostgreSql";

    /// <summary>Gets this node's id: the lease owner of the rows it claims (machine, process id, and a random suffix).</summary>
    public string NodeId { get; }

    /// <summary>
    /// Gets the node's name in the queue's cluster view: <see cref="PostgreSqlWorkQueueOptions{T}.NodeName"/>, or its
    /// <see cref="NodeId"/> (<c>{host}:{process id}:{random suffix}</c>: host and process id alone repeat between
    /// containers on one host network, each its process 1, and between two consumers of the queue in one process).
    /// </summary>
    internal string NodeName => _options.NodeName ?? NodeId;

    public WorkQueueStorageStatistics Statistics
    {
        get
        {
            var statistics = Volatile.Read(ref _statistics);
            var available = _health.IsAvailable && statistics.ReadAt != DateTimeOffset.MinValue;
            return statistics with { IsAvailable = available, LastError = available ? null : _health.LastError ?? statistics.LastError, Pause = FleetPause, Warning = _pauses.Problem ?? ClusterPermitProblem() };
        }
    }

    private BoundedExecutor Executor => _executor ??= _context.Executor;

    public async Task<CancelResult> CancelAsync(long itemId, CancellationToken cancellationToken = default)
    {
        short? found;
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            var command = _statements.Cancel.Command(connection, new CancelParameters(Name, itemId, "cancelled before it ran", _sql.NotifyChannel, _sql.CancelChannel));
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    found = CancelStatement.ReadFound(reader);
                }
            }
        }

        switch (found)
        {
            case StorageSql.Ready or StorageSql.Scheduled:
                StorageMetrics.Cancelled.Add(1, StorageMetrics.QueueTag(Name));
                _claimLoop.Wake(); // the next item of its key may run here too
                return CancelResult.Cancelled;
            case StorageSql.Running:
                OnCancellationRequested(itemId); // this node's own delivery hears of it without the notification's round trip
                return CancelResult.CancellationRequested;
            case StorageSql.Completed:
                return CancelResult.AlreadyCompleted;
            case StorageSql.Dead:
                return CancelResult.AlreadyDeadLettered;
            case StorageSql.Cancelled:
                return CancelResult.AlreadyCancelled;
            default:
                return CancelResult.NotFound;
        }
    }

    public async Task<WorkQueueStorageStatistics> ReadStatisticsAsync(CancellationToken cancellationToken = default)
    {
        var connection = await _asyncSource.OpenConnectionAsync(cancellationToken).ConfigureAwait(false);
        await using (connection.ConfigureAwait(false))
        {
            WorkQueueStorageStatistics statistics;
            var command = _statements.Statistics.Command(connection, Name);
            await using (command.ConfigureAwait(false))
            {
                var reader = await command.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (reader.ConfigureAwait(false))
                {
                    await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
                    statistics = StatisticsStatement.Read(reader, _options.TimeProvider.GetUtcNow());
                }
            }

            var tenants = _statements.TenantStatistics.Command(connection, Name, _options.TenantSeriesLimit);
            await using (tenants.ConfigureAwait(false))
            {
                var rows = await tenants.ExecuteReaderAsync(cancellationToken).ConfigureAwait(false);
                await using (rows.ConfigureAwait(false))
                {
                    var read = new List<WorkQueueTenantStatistics>();
                    while (await rows.ReadAsync(cancellationToken).ConfigureAwait(false))
                    {
                        read.Add(TenantStatisticsStatement.Read(rows));
                    }

                    return statistics with { Tenants = WithOutcomes(read) };
                }
            }
        }
    }

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        _ = Executor;
        int from, to;
        try
        {
            (from, to) = await SchemaMigrator.MigrateAsync(_asyncSource, _sql, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is NpgsqlException or TimeoutException)
        {
            throw new InvalidOperationException(
                $"Work queue '{Name}' could not create or upgrade its schema \"{_sql.Schema}\" in PostgreSQL at start: {ex.Message}", ex);
        }

        _logger.SchemaReady(Name, _sql.Schema, to, from, NodeName, NodeId);
        StorageMetrics.Register(this);
        WarmThreadsPool();
        _outcomeThread = StartThread("outcomes", () => _outcomes.Run(_abandonOutcomes.Token));
        if (_options.Consume)
        {
            StartCluster(); // the fleet-wide settings are read and applied before the first claim
            _claimThreads.Add(StartThread("claims", () => _claimLoop.Run(_claiming.Token)));
            _claimThreads.Add(StartThread("listener", () => _listener.Run(_claiming.Token), usesThreadsPool: false)); // its own connection, not pooled with them
            _backgroundThreads.Add(StartThread("leases", () => _leaseKeeper.Run(_background.Token)));
        }

        _backgroundThreads.Add(StartThread("maintenance", () => RunMaintenance(_background.Token)));
        _backgroundThreads.Add(StartThread("notifier", () => _notifier.Run(_background.Token)));
    }

    /// <summary>Gets how many wake-up notifications this node has sent on its own connection (not those sent by statements in callers' transactions).</summary>
    internal long NotificationsSent => _notifier.Sent;

    public Task StoppingAsync(CancellationToken cancellationToken)
    {
        // Claim nothing more; what is claimed runs (or is released) while the executors drain.
        _claiming.Cancel();
        _claimLoop.Wake();
        foreach (var thread in _claimThreads)
        {
            thread.Join(Timeout.InfiniteTimeSpan, cancellationToken);
        }

        ReleaseReserved(_permits.CloseReserve()); // reserved items never started: back to ready now
        ClosePrefetch(); // and the keys' prefetched items
        return Task.CompletedTask;
    }

    public Task StoppedAsync(CancellationToken cancellationToken)
    {
        // Every executor has stopped (or given up at the deadline): the outcomes posted so far, releases of the items
        // handed back included, are all there will be. Writing them is what keeps those items from running again
        // after their lease, so it gets a grace of its own even when the host's deadline has passed. Leases stay
        // renewed meanwhile.
        _outcomes.Complete();
        var grace = TimeSpan.FromTicks(Math.Min(_options.LeaseDuration.Ticks, OutcomeFlushGrace.Ticks));
        if (_outcomeThread is { } outcomes && !outcomes.Join(grace, CancellationToken.None))
        {
            _abandonOutcomes.Cancel();
            outcomes.Join(Timeout.InfiniteTimeSpan, CancellationToken.None);
        }

        _background.Cancel();
        foreach (var thread in _backgroundThreads)
        {
            thread.Join(Timeout.InfiniteTimeSpan, CancellationToken.None);
        }

        LeaveCluster();
        StorageMetrics.Unregister(this);
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        StorageMetrics.Unregister(this);
        DisposeClusterRateLimiters(); // before the data source they renew their shares on
        _claiming.Cancel();
        _background.Cancel();
        _abandonOutcomes.Cancel();
        _outcomes.Complete();
        _claimLoop.Wake();
        foreach (var thread in (IEnumerable<StorageThread>)[.. _claimThreads, .. _backgroundThreads, .. _outcomeThread is null ? [] : new[] { _outcomeThread }])
        {
            thread.Join(Timeout.InfiniteTimeSpan);
            thread.Dispose();
        }

        _dataSource.Dispose();
        _asyncSource.Dispose();
        _listenerSource.Dispose();
        _claiming.Dispose();
        _background.Dispose();
        _abandonOutcomes.Dispose();
        _outcomes.Dispose();
        _notifier.Dispose();
        _claimLoop.Dispose();
        _settingsChanged.Dispose();
    }

    /// <summary>Checks the invariants of the node's components (in Debug builds): called by the stress and model tests.</summary>
    [System.Diagnostics.Conditional("DEBUG")]
    internal void AssertInvariants()
    {
        _claimLoop.AssertInvariants();
        _room.AssertInvariants();
        _keys.AssertInvariants();
        _permits.AssertInvariants();
    }

    /// <summary>Reads the statistics on the calling (storage) thread.</summary>
    private WorkQueueStorageStatistics ReadStatistics()
    {
        using var connection = _dataSource.OpenConnection();
        using var command = _statements.Statistics.Command(connection, Name);
        WorkQueueStorageStatistics statistics;
        using (var reader = command.ExecuteReader())
        {
            reader.Read();
            statistics = StatisticsStatement.Read(reader, _options.TimeProvider.GetUtcNow());
        }

        using var tenants = _statements.TenantStatistics.Command(connection, Name, _options.TenantSeriesLimit);
        using var rows = tenants.ExecuteReader();
        var read = new List<WorkQueueTenantStatistics>();
        while (rows.Read())
        {
            read.Add(TenantStatisticsStatement.Read(rows));
        }

        return statistics with { Tenants = WithOutcomes(read) };
    }

    /// <summary>The busiest tenants read from the database, each with what became of its deliveries on this node.</summary>
    private List<WorkQueueTenantStatistics> WithOutcomes(List<WorkQueueTenantStatistics> tenants)
    {
        if (tenants.Count == 0)
        {
            return tenants;
        }

        var outcomes = TenantOutcomes.Read().ToDictionary(t => t.Tenant, StringComparer.Ordinal);
        return [.. tenants.Select(t => outcomes.TryGetValue(t.Tenant, out var o) ? t with { Completed = o.Completed, Failed = o.Failed, DeadLettered = o.DeadLettered } : t)];
    }

    /// <summary>
    /// The queue's own data sources, built from the connection string with four changes. No logging through the
    /// application's logger factory: Npgsql logs every command at Information, and these loops run several a second
    /// (the queue's own log events report every failure). No connection reset when a pooled connection is returned
    /// (the loops leave no session state behind, and the reset would cost one more statement per operation), and the
    /// loops' statements prepared automatically. And sequential scans off in the queue's own sessions, so that a
    /// prepared statement's plan stays on the indexes its statement is written for whatever the table's size was
    /// when the plan was made (see <see cref="StorageSql"/>, plan shapes): without it, an outcome write of forty rows
    /// read 14,000 buffers once the table had grown. And generic plans only (<c>plan_cache_mode</c>): a prepared
    /// statement is planned once per session, not at every execution; PostgreSQL's own choice kept re-planning the
    /// per-key claim (<see cref="KeyedClaimSql"/>) at every claim, which cost two thirds of its time, and the statements'
    /// shapes do not depend on their parameters' values. The listener's connection is not pooled: its LISTEN ends with it.
    /// The pool of the queue's threads is used synchronously only, and its sockets complete inline, so those threads
    /// need no ThreadPool thread for their I/O (see <see cref="InlineSocketCompletions"/>); the asynchronous API has a
    /// pool of its own, whose continuations never run on the runtime's socket thread.
    /// </summary>
    private static NpgsqlDataSource CreateDataSource(string connectionString, string name, SessionUse use)
    {
        var builder = new NpgsqlDataSourceBuilder(connectionString) { Name = "BoundedWork:" + name };
        if (use == SessionUse.Listener)
        {
            builder.ConnectionStringBuilder.Pooling = false;
            return builder.Build();
        }

        builder.ConnectionStringBuilder.NoResetOnClose = true;
        builder.ConnectionStringBuilder.MaxAutoPrepare = 32;
        builder.ConnectionStringBuilder.AutoPrepareMinUsages = 2;
        builder.UsePhysicalConnectionInitializer(
            connection =>
            {
                if (use == SessionUse.Threads)
                {
                    InlineSocketCompletions.TryEnable(connection);
                }

                using var command = new NpgsqlCommand(SessionSettings, connection);
                command.ExecuteNonQuery();
            },
            static async connection =>
            {
                var command = new NpgsqlCommand(SessionSettings, connection);
                await using (command.ConfigureAwait(false))
                {
                    await command.ExecuteNonQueryAsync().ConfigureAwait(false);
                }
            });
        return builder.Build();
    }

    /// <summary>
    /// Opens, before the node's threads start, as many connections of their pool as they and two blocking producers use
    /// at once (within the pool's <c>Maximum Pool Size</c>), and returns them to the pool idle. A connection's socket
    /// completes inline only once it is open: the connect and the handshake before that can still hand a synchronous
    /// read's wake-up to the ThreadPool, and under a starved pool such an open waits until it times out. Opened here, on
    /// the host's start path, the node's threads and the first blocking producers find their connections open. (One
    /// opened later, while the pool is starved, can still time out: see the durable queue docs.) If an open fails here,
    /// the threads open their own and report what fails.
    /// </summary>
    private void WarmThreadsPool()
    {
        var pool = new NpgsqlConnectionStringBuilder(_dataSource.ConnectionString);
        var maximum = pool.Pooling ? pool.MaxPoolSize : 0; // without pooling there is nothing to open ahead
        var wanted = Math.Min((_options.Consume ? ConsumingThreadsUsingThePool : ProducingThreadsUsingThePool) + BlockingProducersWarmed, maximum);
        var opened = new List<NpgsqlConnection>(wanted);
        try
        {
            while (opened.Count < wanted)
            {
                opened.Add(_dataSource.OpenConnection());
            }
        }
        catch (Exception ex) when (ex is NpgsqlException or TimeoutException or InvalidOperationException)
        {
            // Nothing depends on it: the threads open their own connections, and report their failures.
        }
        finally
        {
            foreach (var connection in opened)
            {
                connection.Dispose();
            }
        }
    }

    /// <summary>Opens a connection of the queue's threads' pool (for tests: its socket completes inline).</summary>
    internal NpgsqlConnection OpenThreadConnection() => _dataSource.OpenConnection();

    /// <summary>Opens a connection of the asynchronous API's pool (for tests: its socket does not complete inline).</summary>
    internal Task<NpgsqlConnection> OpenAsyncApiConnectionAsync() => _asyncSource.OpenConnectionAsync().AsTask();

    /// <summary>What a data source of the queue is for.</summary>
    private enum SessionUse
    {
        /// <summary>The queue's own threads and the synchronous enqueue: synchronous I/O only.</summary>
        Threads,

        /// <summary>The asynchronous API.</summary>
        Async,

        /// <summary>The listener's one connection, not pooled.</summary>
        Listener,
    }

    /// <summary>The notifier's send: one wake-up notification for this queue, on a connection of its own (its own transaction).</summary>
    private bool TryNotify()
    {
        try
        {
            using (var connection = _dataSource.OpenConnection())
            using (var command = new NpgsqlCommand("SELECT pg_notify($1, $2)", connection))
            {
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = _sql.NotifyChannel });
                command.Parameters.Add(new NpgsqlParameter<string> { TypedValue = Name });
                command.ExecuteNonQuery();
            }

            if (_health.Succeeded(NotifyLoop))
            {
                _logger.StorageRecovered(Name, NotifyLoop);
            }

            return true;
        }
        catch (Exception ex) when (ex is NpgsqlException or InvalidOperationException or TimeoutException)
        {
            if (_health.Failed(NotifyLoop, ex))
            {
                _logger.StorageUnavailable(Name, NotifyLoop, TimeSpan.FromMilliseconds(100), ex);
            }

            return false;
        }
    }

    /// <summary>Starts one of the node's threads; <paramref name="usesThreadsPool"/>: it runs its statements on the threads' pool (counted in <see cref="ThreadsUsingThePool"/>).</summary>
    private StorageThread StartThread(string loop, Action body, bool usesThreadsPool = true)
    {
        if (usesThreadsPool)
        {
            lock (_threadsUsingThePool)
            {
                _threadsUsingThePool.Add(loop);
            }
        }

        return StorageThread.Start($"BoundedWork.PostgreSql {Name} {loop}", body);
    }

    private T? Deserialize(string payload) => JsonSerializer.Deserialize(payload, _json);
}
