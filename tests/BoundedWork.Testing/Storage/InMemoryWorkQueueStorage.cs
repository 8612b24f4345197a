using BoundedWork.Hosting;

namespace BoundedWork.Testing.Storage;

/// <summary>
/// A second durable storage, written only against BoundedWork.Hosting's public storage contract: one process's memory
/// stands in for the database. It keeps every promise of <see cref="IWorkQueueStorage{T}"/> that a single node can
/// observe: ids, idempotency keys, delays, priorities, ordering keys, claims bounded by the executor's room,
/// deliveries handed back when the executor does not run them, stored retries with backoff, dead letters to browse,
/// requeue and purge, cancellation of ready and running items, and statistics. Leases are not needed: no other node
/// shares the memory, and a crash loses it.
/// </summary>
/// <remarks>
/// One lock guards the rows; no handler and no executor call runs under it. A dedicated claim thread claims (never a
/// ThreadPool thread), woken by enqueues and written outcomes, or when the next delayed item falls due.
/// </remarks>
public sealed class InMemoryWorkQueueStorage<T> : IWorkQueueStorage<T>, IDisposable
{
    private static readonly Action<Delivery> s_run = static delivery => delivery.Storage.Run(delivery);

    private readonly WorkQueueStorageContext<T> _context;
    private readonly TimeProvider _time;
    private readonly object _lock = new();
    private readonly SortedDictionary<long, Row> _rows = [];
    private readonly Dictionary<string, long> _keys = new(StringComparer.Ordinal);
    private readonly Dictionary<long, Delivery> _deliveries = [];
    private readonly AutoResetEvent _wake = new(false);
    private readonly CancellationTokenSource _claiming = new();
    private Thread? _claimThread;
    private long _lastId;
    private readonly int _claimsPerWorker;
    private int _held;
    private int _disposed;

    public InMemoryWorkQueueStorage(WorkQueueStorageContext<T> context, int claimsPerWorker = 2, TimeProvider? time = null)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentOutOfRangeException.ThrowIfLessThan(claimsPerWorker, 1);
        _claimsPerWorker = claimsPerWorker;
        _context = context;
        _time = time ?? TimeProvider.System;
    }

    private enum State
    {
        Ready,
        Scheduled,
        Running,
        Completed,
        Dead,
        Cancelled,
    }

    public string Name => _context.QueueName;

    public string QueueName => _context.QueueName;

    public string StorageKind => "InMemory";

    public WorkQueueStorageStatistics Statistics => ReadStatistics();

    public bool TryEnqueue(T item)
    {
        Store([item], new EnqueueOptions());
        return true;
    }

    public ValueTask EnqueueAsync(T item, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        Store([item], new EnqueueOptions());
        return ValueTask.CompletedTask;
    }

    public Task<long> EnqueueWithIdAsync(T item, CancellationToken cancellationToken = default) =>
        Task.FromResult(Store([item], new EnqueueOptions())[0].ItemId);

    public Task<EnqueueResult> EnqueueAsync(T item, EnqueueOptions options, CancellationToken cancellationToken = default) =>
        Task.FromResult(Store([item], options)[0]);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, CancellationToken cancellationToken = default) =>
        EnqueueManyAsync(items, new EnqueueOptions(), cancellationToken);

    public Task<IReadOnlyList<long>> EnqueueManyAsync(IEnumerable<T> items, EnqueueOptions options, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(items);
        ArgumentNullException.ThrowIfNull(options);
        if (options.IdempotencyKey is not null)
        {
            throw new ArgumentException("EnqueueOptions.IdempotencyKey applies to one item: enqueue keyed items one by one.", nameof(options));
        }

        return Task.FromResult<IReadOnlyList<long>>([.. Store([.. items], options).Select(result => result.ItemId)]);
    }

    public Task<CancelResult> CancelAsync(long itemId, CancellationToken cancellationToken = default)
    {
        Delivery? running = null;
        CancelResult result;
        lock (_lock)
        {
            if (!_rows.TryGetValue(itemId, out var row))
            {
                return Task.FromResult(CancelResult.NotFound);
            }

            switch (row.State)
            {
                case State.Ready or State.Scheduled:
                    Finish(row, State.Cancelled, "cancelled before it ran");
                    result = CancelResult.Cancelled;
                    break;
                case State.Running:
                    _deliveries.TryGetValue(itemId, out running);
                    result = CancelResult.CancellationRequested;
                    break;
                case State.Completed:
                    return Task.FromResult(CancelResult.AlreadyCompleted);
                case State.Dead:
                    return Task.FromResult(CancelResult.AlreadyDeadLettered);
                default:
                    return Task.FromResult(CancelResult.AlreadyCancelled);
            }
        }

        // Outside the lock: the token's callbacks are the handler's code.
        running?.RequestCancellation();
        _wake.Set();
        return Task.FromResult(result);
    }

    public Task<WorkQueueStorageStatistics> ReadStatisticsAsync(CancellationToken cancellationToken = default) => Task.FromResult(ReadStatistics());

    public Task<DeadLetterPage> ListDeadLettersAsync(DeadLetterQuery query, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        long? before = query.Cursor is null ? null : long.Parse(query.Cursor, System.Globalization.CultureInfo.InvariantCulture);
        lock (_lock)
        {
            var dead = _rows.Values
                .Where(row => row.State == State.Dead && (before is null || row.Id < before)
                    && (query.Since is null || row.FinishedAt >= query.Since) && (query.Until is null || row.FinishedAt < query.Until))
                .OrderByDescending(row => row.Id)
                .Take(query.Limit + 1)
                .ToList();
            var page = dead.Take(query.Limit).Select(row => ToStoredDeadLetter(row, 0)).ToList();
            var next = dead.Count > query.Limit ? page[^1].ItemId.ToString(System.Globalization.CultureInfo.InvariantCulture) : null;
            return Task.FromResult(new DeadLetterPage(page, next));
        }
    }

    public Task<StoredDeadLetter?> GetDeadLetterAsync(long itemId, int maxPayloadLength, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxPayloadLength, 1);
        lock (_lock)
        {
            return Task.FromResult(_rows.TryGetValue(itemId, out var row) && row.State == State.Dead ? ToStoredDeadLetter(row, maxPayloadLength) : null);
        }
    }

    public Task<int> RequeueDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        var requeued = 0;
        lock (_lock)
        {
            foreach (var row in Selected(selection))
            {
                row.State = State.Ready;
                row.DueAt = _time.GetUtcNow();
                row.AttemptBase = row.Attempts;
                row.FinishedAt = null;
                requeued++;
            }
        }

        _wake.Set();
        return Task.FromResult(requeued);
    }

    public Task<int> PurgeDeadLettersAsync(DeadLetterSelection selection, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(selection);
        lock (_lock)
        {
            var purged = Selected(selection);
            foreach (var row in purged)
            {
                _rows.Remove(row.Id);
                if (row.IdempotencyKey is { } key)
                {
                    _keys.Remove(key);
                }
            }

            return Task.FromResult(purged.Count);
        }
    }

    public Task StartAsync(CancellationToken cancellationToken)
    {
        _ = _context.Executor;
        _claimThread = new Thread(RunClaims) { IsBackground = true, Name = $"InMemoryWorkQueueStorage {Name} claims" };
        _claimThread.Start();
        return Task.CompletedTask;
    }

    public Task StoppingAsync(CancellationToken cancellationToken)
    {
        _claiming.Cancel();
        _wake.Set();
        _claimThread?.Join();
        return Task.CompletedTask;
    }

    public Task StoppedAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    public void Dispose()
    {
        // The container disposes the storage once for each service it was resolved as.
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        _claiming.Cancel();
        _wake.Set();
        _claimThread?.Join();
        _claiming.Dispose();
        _wake.Dispose();
    }

    private List<EnqueueResult> Store(IReadOnlyList<T> items, EnqueueOptions options)
    {
        EnqueueOptions.Validate(options, _time);
        var now = _time.GetUtcNow();
        var due = options.RunAt ?? now + (options.Delay ?? TimeSpan.Zero);
        var results = new List<EnqueueResult>(items.Count);
        lock (_lock)
        {
            foreach (var item in items)
            {
                if (options.IdempotencyKey is { } key && _keys.TryGetValue(key, out var existing))
                {
                    results.Add(new EnqueueResult(existing, IsDuplicate: true));
                    continue;
                }

                var id = ++_lastId;
                _rows.Add(id, new Row(id, item, now)
                {
                    State = due > now ? State.Scheduled : State.Ready,
                    DueAt = due,
                    Priority = options.Priority,
                    OrderingKey = _context.Options.OrderingKey?.Invoke(item) is { } orderingKey ? Convert.ToString(orderingKey, System.Globalization.CultureInfo.InvariantCulture) : null,
                    IdempotencyKey = options.IdempotencyKey,
                });
                if (options.IdempotencyKey is { } newKey)
                {
                    _keys.Add(newKey, id);
                }

                results.Add(new EnqueueResult(id, IsDuplicate: false));
            }
        }

        _wake.Set();
        return results;
    }

    private void RunClaims()
    {
        var token = _claiming.Token;
        while (!token.IsCancellationRequested)
        {
            var (claimed, nextDue) = Claim();
            foreach (var delivery in claimed)
            {
                // Refused (the executor is stopping): the queue calls OnNotRun, which hands the item back.
                _context.Executor.TryExecute(s_run, delivery);
            }

            if (claimed.Count > 0)
            {
                continue;
            }

            var wait = nextDue is { } due ? due - _time.GetUtcNow() : TimeSpan.FromMilliseconds(100);
            _wake.WaitOne(wait < TimeSpan.FromMilliseconds(1) ? TimeSpan.FromMilliseconds(1) : wait > TimeSpan.FromMilliseconds(100) ? TimeSpan.FromMilliseconds(100) : wait);
        }
    }

    /// <summary>Claims what the executor has room for: the highest priority first, then the earliest due; one item per ordering key, the oldest.</summary>
    private (List<Delivery> Claimed, DateTimeOffset? NextDue) Claim()
    {
        var settings = _context.Executor.Settings;
        var claimed = new List<Delivery>();
        DateTimeOffset? nextDue = null;
        lock (_lock)
        {
            var room = (int)Math.Min((long)settings.WorkerCount * _claimsPerWorker, (long)settings.WorkerCount + settings.QueueCapacity) - _held;
            var now = _time.GetUtcNow();
            var blockedKeys = new HashSet<string>(StringComparer.Ordinal);
            foreach (var row in _rows.Values)
            {
                if (row.State == State.Scheduled && row.DueAt <= now)
                {
                    row.State = State.Ready;
                }

                if (row.State == State.Scheduled)
                {
                    nextDue = nextDue is null || row.DueAt < nextDue ? row.DueAt : nextDue;
                }
            }

            // An ordering key runs its oldest unfinished item only.
            var eligible = new List<Row>();
            foreach (var row in _rows.Values)
            {
                if (row.State is State.Completed or State.Dead or State.Cancelled)
                {
                    continue;
                }

                if (row.OrderingKey is { } key && !blockedKeys.Add(key))
                {
                    continue;
                }

                if (row.State == State.Ready)
                {
                    eligible.Add(row);
                }
            }

            foreach (var row in eligible.OrderByDescending(row => row.Priority).ThenBy(row => row.DueAt).ThenBy(row => row.Id).Take(Math.Max(room, 0)))
            {
                row.State = State.Running;
                row.Attempts++;
                var delivery = new Delivery(this, row.Id, row.Item, new StoredDelivery(row.Id, row.Attempts, row.AttemptBase, row.EnqueuedAt));
                _deliveries[row.Id] = delivery;
                _held++;
                claimed.Add(delivery);
            }
        }

        return (claimed, nextDue);
    }

    private void Run(Delivery delivery)
    {
        if (!delivery.TryStart())
        {
            return;
        }

        if (delivery.IsCancellationRequested)
        {
            Record(delivery, State.Cancelled, TimeSpan.Zero, "cancelled before it ran");
            return;
        }

        var outcome = _context.Run(delivery.Item, delivery.Info, delivery.CancellationToken);
        switch (outcome.Kind)
        {
            case StoredOutcomeKind.Completed:
                Record(delivery, State.Completed, TimeSpan.Zero, null);
                break;
            case StoredOutcomeKind.Retry:
                Record(delivery, State.Scheduled, outcome.RetryDelay, outcome.Exception?.Message);
                break;
            case StoredOutcomeKind.Cancelled:
                Record(delivery, State.Cancelled, TimeSpan.Zero, outcome.Exception?.Message);
                break;
            default:
                Record(delivery, State.Dead, TimeSpan.Zero, outcome.Exception?.Message);
                break;
        }
    }

    /// <summary>The executor will not run the delivery: the item is ready again, and this claim does not count.</summary>
    private void Release(Delivery delivery)
    {
        lock (_lock)
        {
            var row = _rows[delivery.Info.ItemId];
            row.State = State.Ready;
            row.Attempts--;
            _deliveries.Remove(row.Id);
            _held--;
        }

        _wake.Set();
    }

    private void Record(Delivery delivery, State state, TimeSpan retryDelay, string? error)
    {
        lock (_lock)
        {
            var row = _rows[delivery.Info.ItemId];
            _deliveries.Remove(row.Id);
            _held--;
            if (state == State.Scheduled)
            {
                row.State = State.Scheduled;
                row.DueAt = _time.GetUtcNow() + retryDelay;
                row.LastError = error;
            }
            else
            {
                Finish(row, state, error);
            }
        }

        _wake.Set();
    }

    private void Finish(Row row, State state, string? error)
    {
        row.State = state;
        row.LastError = error;
        row.FinishedAt = _time.GetUtcNow();
    }

    private List<Row> Selected(DeadLetterSelection selection) =>
        [.. _rows.Values.Where(row => row.State == State.Dead
            && (selection.ItemIds is not { } ids || ids.Contains(row.Id))
            && (selection.Since is null || row.FinishedAt >= selection.Since)
            && (selection.Until is null || row.FinishedAt < selection.Until))];

    private static StoredDeadLetter ToStoredDeadLetter(Row row, int maxPayloadLength)
    {
        var payload = System.Text.Json.JsonSerializer.Serialize(row.Item);
        return new StoredDeadLetter
        {
            ItemId = row.Id,
            Attempts = row.Attempts,
            LastError = row.LastError,
            EnqueuedAt = row.EnqueuedAt,
            DeadAt = row.FinishedAt ?? row.EnqueuedAt,
            Priority = row.Priority,
            OrderingKey = row.OrderingKey,
            Payload = maxPayloadLength == 0 ? null : payload[..Math.Min(payload.Length, maxPayloadLength)],
            PayloadLength = payload.Length,
            IsPayloadTruncated = maxPayloadLength > 0 && payload.Length > maxPayloadLength,
        };
    }

    private WorkQueueStorageStatistics ReadStatistics()
    {
        lock (_lock)
        {
            var now = _time.GetUtcNow();
            var ready = _rows.Values.Where(row => row.State == State.Ready || (row.State == State.Scheduled && row.DueAt <= now)).ToList();
            return new WorkQueueStorageStatistics
            {
                Ready = ready.Count,
                Scheduled = _rows.Values.Count(row => row.State == State.Scheduled && row.DueAt > now),
                Running = _rows.Values.Count(row => row.State == State.Running),
                DeadLettered = _rows.Values.Count(row => row.State == State.Dead),
                Completed = _rows.Values.Count(row => row.State == State.Completed),
                Cancelled = _rows.Values.Count(row => row.State == State.Cancelled),
                OldestReadyAge = ready.Count == 0 ? TimeSpan.Zero : now - ready.Min(row => row.DueAt),
                IsAvailable = true,
                ReadAt = now,
            };
        }
    }

    private sealed class Row(long id, T item, DateTimeOffset enqueuedAt)
    {
        public long Id { get; } = id;

        public T Item { get; } = item;

        public DateTimeOffset EnqueuedAt { get; } = enqueuedAt;

        public State State { get; set; }

        public DateTimeOffset DueAt { get; set; }

        public int Priority { get; init; }

        public string? OrderingKey { get; init; }

        public string? IdempotencyKey { get; init; }

        public int Attempts { get; set; }

        public int AttemptBase { get; set; }

        public string? LastError { get; set; }

        public DateTimeOffset? FinishedAt { get; set; }
    }

    /// <summary>One claim of an item: ends once, run or handed back.</summary>
    private sealed class Delivery(InMemoryWorkQueueStorage<T> storage, long id, T item, StoredDelivery info) : IWorkQueueDelivery
    {
        private readonly CancellationTokenSource _cancellation = new();
        private int _state;
        private int _cancellationRequested;

        public InMemoryWorkQueueStorage<T> Storage { get; } = storage;

        public long Id { get; } = id;

        public T Item { get; } = item;

        public StoredDelivery Info { get; } = info;

        public CancellationToken CancellationToken => _cancellation.Token;

        public bool IsCancellationRequested => Volatile.Read(ref _cancellationRequested) != 0;

        public void RequestCancellation()
        {
            if (Interlocked.Exchange(ref _cancellationRequested, 1) == 0)
            {
                _cancellation.Cancel();
            }
        }

        public bool TryStart() => Interlocked.CompareExchange(ref _state, 1, 0) == 0;

        public Task OnNotRun(RejectionReason reason)
        {
            if (Interlocked.CompareExchange(ref _state, 2, 0) == 0)
            {
                Storage.Release(this);
            }

            return Task.CompletedTask;
        }
    }
}
