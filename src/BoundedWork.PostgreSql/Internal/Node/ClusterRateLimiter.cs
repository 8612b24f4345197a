using System.Diagnostics;
using System.Threading.RateLimiting;
using BoundedWork.Hosting;
using Microsoft.Extensions.Logging;
using Npgsql;

namespace BoundedWork.PostgreSql.Internal;

/// <summary>What a cluster rate limiter needs of its queue: where the rows are, how often to beat, the clock and the log.</summary>
internal sealed record ClusterRateLimiterContext(
    string QueueName, NpgsqlDataSource DataSource, ClusterSql ClusterSql, PermitGrantSql GrantSql, TimeSpan HeartbeatInterval, TimeProvider Time, ILogger Logger);

/// <summary>
/// A durable queue's cluster limits (<c>max_running</c>, <c>starts_per_second</c> with <c>start_burst</c>) as a
/// <see cref="RateLimiter"/>: a member of the queue's permit allocation that holds permits for code outside the queue.
/// A lease of N permits counts as N handlers: it holds N running permits until it is disposed, and spent N start tokens
/// when it was granted.
/// </summary>
/// <remarks>
/// <para>
/// <b>A member of the allocation</b> (I4 in docs/durable-invariants.md). The limiter writes its own row in <c>nodes</c>, as a node does, with
/// <see cref="PostgreSqlClusterRateLimiterOptions.PermitLimit"/> as its workers and its demand, and renews its grant with
/// the nodes' own statements (<see cref="PermitGrantSql"/>) and allocation (<see cref="PermitAllocation"/>) at every
/// heartbeat on its own thread. So the nodes count its grant as they count each other's, and it counts theirs and the
/// dead nodes' running rows: the argument of <see cref="PermitAllocation"/> covers it unchanged. Leases are counted
/// locally, against the grant, without a round trip.
/// </para>
/// <para>
/// <b>Invariant</b> (under <see cref="SyncObj"/>): <c>_inUse</c> is the permits of the leases not yet disposed; a lease
/// is granted only while <c>_inUse + n</c> is within <see cref="PostgreSqlClusterRateLimiterOptions.PermitLimit"/> and
/// the running allowance, <c>n</c> whole tokens are in the rate share's bucket, and the grant has not expired on this
/// process's clock (<c>_expiresAt</c>: three heartbeats after the start of the renewal that wrote it, so no later than
/// the database sees the row expire). Before a renewal writes a smaller grant, the allowance and the share drop to it
/// (they grow only once it commits). Waiters are served oldest first; a waiter is completed or cancelled exactly once,
/// the one that removes it from <c>_waiters</c> under the lock, and completed outside it.
/// </para>
/// </remarks>
internal sealed class ClusterRateLimiter : RateLimiter
{
    private static readonly TimeSpan JoinTimeout = TimeSpan.FromSeconds(5);

    private readonly ClusterRateLimiterContext _context;
    private readonly int _permitLimit;
    private readonly int _queueLimit;
    private readonly string _leaseOwner;
    private readonly DateTimeOffset _startedAt;
    private readonly TimeSpan _lifetime;
    private readonly LocalTokenBucket _bucket;
    private readonly LinkedList<Waiter> _waiters = new();
    private readonly WakeSignal _wake = new();
    private readonly CancellationTokenSource _stop = new();
    private readonly StorageThread _thread;

    private int _inUse;
    private int? _allowed;
    private bool _rated;
    private bool _hadGrant;
    private long _expiresAt;
    private bool _everGranted;
    private long _version = -1;
    private int _queuedPermits;
    private long _successful;
    private long _failed;
    private bool _disposed;

    /// <summary>Written and read only by the limiter's thread.</summary>
    private bool _failing;
    private bool _lapseLogged;

    private readonly Action<ClusterRateLimiter> _onDisposed;

    public ClusterRateLimiter(ClusterRateLimiterContext context, PostgreSqlClusterRateLimiterOptions options, Action<ClusterRateLimiter> onDisposed)
    {
        _context = context;
        _onDisposed = onDisposed;
        _permitLimit = options.PermitLimit;
        _queueLimit = options.QueueLimit;
        var suffix = Guid.NewGuid().ToString("N")[..8];
        _leaseOwner = $"{Environment.MachineName}:{Environment.ProcessId}:limiter:{suffix}";
        Name = options.Name ?? _leaseOwner;
        _startedAt = context.Time.GetUtcNow();
        _lifetime = context.HeartbeatInterval * 3;
        _bucket = new LocalTokenBucket(context.Time);
        _expiresAt = context.Time.GetTimestamp(); // nothing granted before the first renewal
        _thread = StorageThread.Start($"BoundedWork limiter {context.QueueName}", Run);
    }

    /// <summary>Gets the limiter's name in the queue's cluster view.</summary>
    public string Name { get; }

    /// <summary>The lock of the counts, the grant and the waiters.</summary>
    private Lock SyncObj { get; } = new();

    /// <summary>Never idle: the limiter holds a share of the fleet's budget until its owner disposes it.</summary>
    public override TimeSpan? IdleDuration => null;

    public override RateLimiterStatistics? GetStatistics()
    {
        lock (SyncObj)
        {
            return new RateLimiterStatistics
            {
                CurrentAvailablePermits = AvailableLocked(),
                CurrentQueuedCount = _queuedPermits,
                TotalSuccessfulLeases = _successful,
                TotalFailedLeases = _failed,
            };
        }
    }

    protected override RateLimitLease AttemptAcquireCore(int permitCount)
    {
        CheckCount(permitCount);
        lock (SyncObj)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_waiters.Count == 0 && TryTakeLocked(permitCount))
            {
                _successful++;
                return new Lease(this, permitCount);
            }

            _failed++;
            return RefusalLocked(permitCount, queued: false);
        }
    }

    protected override ValueTask<RateLimitLease> AcquireAsyncCore(int permitCount, CancellationToken cancellationToken)
    {
        CheckCount(permitCount);
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<RateLimitLease>(cancellationToken);
        }

        Waiter waiter;
        lock (SyncObj)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_waiters.Count == 0 && TryTakeLocked(permitCount))
            {
                _successful++;
                return ValueTask.FromResult<RateLimitLease>(new Lease(this, permitCount));
            }

            if (_queuedPermits + permitCount > _queueLimit)
            {
                _failed++;
                return ValueTask.FromResult<RateLimitLease>(RefusalLocked(permitCount, queued: true));
            }

            waiter = new Waiter(permitCount);
            waiter.Node = _waiters.AddLast(waiter);
            _queuedPermits += permitCount;
        }

        if (cancellationToken.CanBeCanceled)
        {
            waiter.Registration = cancellationToken.UnsafeRegister(static (state, token) =>
            {
                var (limiter, w) = ((ClusterRateLimiter, Waiter))state!;
                limiter.Cancel(w, token);
            }, (this, waiter));
        }

        _wake.Set(); // the limiter's thread wakes for the next token the first waiter needs
        return new ValueTask<RateLimitLease>(waiter.Completion.Task);
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            DisposeCore();
        }

        base.Dispose(disposing);
    }

    protected override ValueTask DisposeAsyncCore()
    {
        DisposeCore();
        return base.DisposeAsyncCore();
    }

    /// <summary>Refuses the waiters, stops the thread (which deletes the row) and leaves the queue's list.</summary>
    private void DisposeCore()
    {
        List<Waiter> refused;
        lock (SyncObj)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            refused = [.. _waiters];
            _waiters.Clear();
            _queuedPermits = 0;
        }

        foreach (var waiter in refused)
        {
            waiter.Registration.Dispose();
            waiter.Completion.TrySetResult(new Refusal("The cluster rate limiter was disposed.", null));
        }

        _stop.Cancel();
        _wake.Set();
        if (_thread.Join(JoinTimeout))
        {
            _thread.Dispose();
            _wake.Dispose();
        }

        _onDisposed(this);
    }

    private void CheckCount(int permitCount)
    {
        if (permitCount > _permitLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(permitCount), permitCount,
                $"permitCount ({permitCount}) exceeds the limiter's PermitLimit ({_permitLimit}): no lease could ever hold it.");
        }
    }

    /// <summary>Takes <paramref name="count"/> permits (and as many start tokens) if the grant allows them now.</summary>
    private bool TryTakeLocked(int count)
    {
        Debug.Assert(SyncObj.IsHeldByCurrentThread);
        if (Lapsed())
        {
            return false;
        }

        var free = FreeLocked();
        if (count == 0)
        {
            return free > 0 && (!_rated || _bucket.TimeToNextToken() == TimeSpan.Zero);
        }

        if (free < count || (_rated && _bucket.TimeToNextToken(count - 1) != TimeSpan.Zero))
        {
            return false;
        }

        if (_rated)
        {
            _bucket.Take(count);
        }

        _inUse += count;
        return true;
    }

    private int FreeLocked()
    {
        var free = _permitLimit - _inUse;
        return _allowed is int allowed ? Math.Min(free, allowed - _inUse) : free;
    }

    private int AvailableLocked()
    {
        if (Lapsed())
        {
            return 0;
        }

        var free = FreeLocked();
        if (_rated)
        {
            free = (int)Math.Min(free, Math.Floor(_bucket.Tokens));
        }

        return Math.Max(free, 0);
    }

    private bool Lapsed() => _context.Time.GetTimestamp() - _expiresAt >= 0;

    private Refusal RefusalLocked(int count, bool queued)
    {
        if (queued)
        {
            return new Refusal($"The cluster rate limiter's QueueLimit ({_queueLimit}) is reached: {_queuedPermits} permits wait.", null);
        }

        if (_disposed)
        {
            return new Refusal("The cluster rate limiter was disposed.", null);
        }

        if (Lapsed())
        {
            return new Refusal(_everGranted
                ? "The cluster rate limiter could not renew its share of the queue's cluster limits in time (is the database reachable?): it grants nothing until it does."
                : "The cluster rate limiter has not read its share of the queue's cluster limits yet.", null);
        }

        if (_waiters.Count > 0)
        {
            return new Refusal("Earlier requests wait for the cluster rate limiter's permits.", null);
        }

        if (FreeLocked() < Math.Max(count, 1))
        {
            return new Refusal(_allowed is int allowed && allowed < _permitLimit
                ? $"Every running permit of the limiter's share of the queue's MaxRunning is in use ({_inUse} of {allowed})."
                : $"Every permit of the limiter is in use ({_inUse} of its PermitLimit {_permitLimit}).", null);
        }

        var retry = _bucket.TimeToNextToken(Math.Max(count, 1) - 1);
        return new Refusal("The limiter's share of the queue's StartsPerSecond holds too few tokens now.", retry);
    }

    private void Cancel(Waiter waiter, CancellationToken token)
    {
        lock (SyncObj)
        {
            if (waiter.Node?.List is null)
            {
                return; // completed (or refused at dispose) already
            }

            _waiters.Remove(waiter.Node);
            _queuedPermits -= waiter.Permits;
        }

        waiter.Completion.TrySetCanceled(token);
        Pump(); // the waiters behind it may fit now
    }

    private void Release(int count)
    {
        if (count == 0)
        {
            return;
        }

        lock (SyncObj)
        {
            _inUse -= count;
            Debug.Assert(_inUse >= 0, "permits in use below zero");
        }

        Pump();
    }

    /// <summary>Grants the oldest waiters what fits now, and completes them outside the lock.</summary>
    private void Pump()
    {
        List<Waiter>? granted = null;
        lock (SyncObj)
        {
            while (!_disposed && _waiters.First is { } first && TryTakeLocked(first.Value.Permits))
            {
                _waiters.RemoveFirst();
                _queuedPermits -= first.Value.Permits;
                _successful++;
                (granted ??= []).Add(first.Value);
            }
        }

        foreach (var waiter in granted ?? [])
        {
            waiter.Registration.Dispose();
            if (!waiter.Completion.TrySetResult(new Lease(this, waiter.Permits)))
            {
                Release(waiter.Permits);
            }
        }
    }

    /// <summary>The time until the first waiter's tokens are due, if tokens are what it waits for.</summary>
    private TimeSpan? NextTokenWait()
    {
        lock (SyncObj)
        {
            if (_waiters.First is not { } first || !_rated || Lapsed() || FreeLocked() < Math.Max(first.Value.Permits, 1))
            {
                return null;
            }

            return _bucket.TimeToNextToken(Math.Max(first.Value.Permits, 1) - 1);
        }
    }

    /// <summary>The limiter's thread: its row and grant every heartbeat (sooner after a failure), and the waiters' tokens.</summary>
    private void Run()
    {
        var time = _context.Time;
        var nextBeat = time.GetTimestamp();
        var failureDelay = TimeSpan.FromMilliseconds(100);
        while (!_stop.IsCancellationRequested)
        {
            if (time.GetTimestamp() - nextBeat >= 0)
            {
                try
                {
                    BeatAndRenew();
                    if (_failing)
                    {
                        _failing = false;
                        _context.Logger.StorageRecovered(_context.QueueName, Loop);
                    }

                    failureDelay = TimeSpan.FromMilliseconds(100);
                    nextBeat = time.GetTimestamp() + (long)(_context.HeartbeatInterval.TotalSeconds * time.TimestampFrequency);
                }
#pragma warning disable CA1031 // a dedicated thread: whatever fails is logged and tried again, never thrown out of the thread
                catch (Exception ex)
#pragma warning restore CA1031
                {
                    if (!_failing)
                    {
                        _failing = true;
                        _context.Logger.StorageUnavailable(_context.QueueName, Loop, failureDelay, ex);
                    }

                    nextBeat = time.GetTimestamp() + (long)(failureDelay.TotalSeconds * time.TimestampFrequency);
                    failureDelay = TimeSpan.FromTicks(Math.Min(failureDelay.Ticks * 2, _context.HeartbeatInterval.Ticks));
                }

                ReportLapse();
            }

            Pump();
            var wait = time.GetElapsedTime(time.GetTimestamp(), nextBeat);
            if (NextTokenWait() is { } token && token < wait)
            {
                wait = token;
            }

            _wake.Wait(wait < TimeSpan.Zero ? TimeSpan.Zero : wait + TimeSpan.FromMilliseconds(1), _stop.Token);
        }

        Leave();
    }

    private string Loop => $"cluster rate limiter '{Name}'";

    /// <summary>Logs once when the grant has lapsed (the renewals failed for three heartbeats), and once when it holds again.</summary>
    private void ReportLapse()
    {
        bool lapsed;
        lock (SyncObj)
        {
            lapsed = _everGranted && Lapsed();
        }

        if (lapsed && !_lapseLogged)
        {
            _lapseLogged = true;
            _context.Logger.PermitGrantLapsed(_context.QueueName + " (" + Loop + ")", _lifetime);
        }
        else if (!lapsed && _lapseLogged)
        {
            _lapseLogged = false;
            _context.Logger.PermitGrantRestored(_context.QueueName + " (" + Loop + ")");
        }
    }

    /// <summary>
    /// One heartbeat: the limiter's row written and the settings read in one round trip; then, under a running or rate
    /// limit, its grant renewed in the nodes' grant transaction.
    /// </summary>
    private void BeatAndRenew()
    {
        var time = _context.Time;
        var startedAt = time.GetTimestamp(); // a grant renewed below holds from here, on this process's clock
        var expiresAt = startedAt + (long)(_lifetime.TotalSeconds * time.TimestampFrequency);
        using var connection = _context.DataSource.OpenConnection();
        int inUse;
        long version;
        lock (SyncObj)
        {
            inUse = _inUse;
            version = Math.Max(_version, 0);
        }

        var settings = Beat(connection, inUse, version);
        if (settings.MaxRunning is null && settings.StartsPerSecond is null)
        {
            if (_hadGrant)
            {
                WriteGrant(connection, null, new PermitGrant(null, inUse, 0, 0, 0), inUse);
                _hadGrant = false;
            }

            lock (SyncObj)
            {
                _allowed = null;
                _rated = false;
                _bucket.SetShare(0, 0);
                _version = settings.Version;
                _expiresAt = expiresAt;
                _everGranted = true;
            }

            return;
        }

        using var transaction = connection.BeginTransaction();
        GrantLimits limits;
        long grantVersion;
        using (var lockSettings = new NpgsqlCommand(_context.GrantSql.LockSettings, connection, transaction) { Parameters = { Text(_context.QueueName) } })
        using (var reader = lockSettings.ExecuteReader())
        {
            if (!reader.Read())
            {
                return; // the row went meanwhile: the next beat reads the defaults
            }

            limits = new GrantLimits(reader.IsDBNull(0) ? null : reader.GetInt32(0), reader.IsDBNull(1) ? null : reader.GetDouble(1), reader.IsDBNull(2) ? 0 : reader.GetInt32(2));
            grantVersion = reader.GetInt64(4);
        }

        var others = new List<NodeGrant>();
        long dead = 0;
        using (var read = new NpgsqlCommand(_context.GrantSql.ReadGrants, connection, transaction) { Parameters = { Text(_context.QueueName), Text(Name), Text(_leaseOwner) } })
        using (var reader = read.ExecuteReader())
        {
            while (reader.Read())
            {
                if (reader.IsDBNull(0))
                {
                    dead = reader.GetInt64(6);
                    continue;
                }

                others.Add(new NodeGrant(reader.GetString(0), reader.GetInt32(1), reader.GetInt32(2), reader.GetInt32(3), reader.GetDouble(4), reader.GetInt32(5)));
            }
        }

        var grant = PermitAllocation.Allocate(limits, new NodeGrant(Name, _permitLimit, _permitLimit, 0, 0, 0), 0, others, dead);
        var rated = limits.StartsPerSecond is not null;
        lock (SyncObj)
        {
            // Down to the new grant before it is written; up only once it is committed.
            if (grant.Allowed is int next)
            {
                _allowed = _allowed is int current ? Math.Min(current, next) : next;
            }

            if (rated && !_rated)
            {
                _rated = true;
                _bucket.SetShare(0, 0); // a rate newly set: nothing starts under it before the share is committed
            }
            else if (_rated)
            {
                _bucket.SetShare(Math.Min(_bucket.Rate, grant.Rate), Math.Min(_bucket.Burst, grant.Burst));
            }

            inUse = _inUse;
        }

        grant = grant with { Stored = Math.Max(grant.Allowed ?? inUse, inUse) };
        if (!WriteGrant(connection, transaction, grant, inUse))
        {
            return; // the row expired meanwhile: the next beat writes it again, then the grant
        }

        transaction.Commit();
        _hadGrant = true;
        lock (SyncObj)
        {
            _allowed = grant.Allowed;
            _rated = rated;
            _bucket.SetShare(rated ? grant.Rate : 0, rated ? grant.Burst : 0);
            _version = grantVersion;
            _expiresAt = expiresAt;
            _everGranted = true;
        }

        if (_context.Logger.IsEnabled(LogLevel.Debug))
        {
            _context.Logger.PermitGrantRenewed(_context.QueueName + " (" + Loop + ")", grant.Allowed ?? -1, inUse, grant.Rate, grant.Burst);
        }
    }

    /// <summary>Writes the limiter's row, as a node's heartbeat does (its permit limit as its workers, its leases as its handlers), and reads the settings.</summary>
    private WorkQueueClusterSettings Beat(NpgsqlConnection connection, int inUse, long version)
    {
        using var command = new NpgsqlCommand(_context.ClusterSql.Beat, connection)
        {
            Parameters =
            {
                Text(_context.QueueName),
                Text(Name),
                Text(Environment.MachineName),
                new NpgsqlParameter<int> { TypedValue = Environment.ProcessId },
                Text(ClusterNode.LibraryVersion),
                new NpgsqlParameter<DateTimeOffset> { TypedValue = _startedAt },
                new NpgsqlParameter<TimeSpan> { TypedValue = _lifetime },
                new NpgsqlParameter<int> { TypedValue = _permitLimit },
                new NpgsqlParameter<long> { TypedValue = inUse },
                new NpgsqlParameter<long> { TypedValue = Interlocked.Read(ref _successful) },
                new NpgsqlParameter<long> { TypedValue = 0L },
                new NpgsqlParameter<long> { TypedValue = 0L },
                new NpgsqlParameter<double> { TypedValue = 0d },
                new NpgsqlParameter<double> { TypedValue = 0d },
                new NpgsqlParameter<long> { TypedValue = version },
                new NpgsqlParameter<bool> { TypedValue = false },
                new NpgsqlParameter<int> { TypedValue = inUse },
            },
        };
        using var reader = command.ExecuteReader();
        reader.Read();
        return ClusterSettingsRules.Read(reader);
    }

    private bool WriteGrant(NpgsqlConnection connection, NpgsqlTransaction? transaction, PermitGrant grant, int inUse)
    {
        using var write = new NpgsqlCommand(_context.GrantSql.WriteGrant, connection, transaction)
        {
            Parameters =
            {
                Text(_context.QueueName),
                Text(Name),
                Text(_leaseOwner),
                new NpgsqlParameter<int> { TypedValue = _permitLimit },
                new NpgsqlParameter<int> { TypedValue = grant.Stored },
                new NpgsqlParameter<int> { TypedValue = inUse },
                new NpgsqlParameter<double> { TypedValue = grant.Rate },
                new NpgsqlParameter<int> { TypedValue = grant.Burst },
            },
        };
        return write.ExecuteNonQuery() == 1;
    }

    /// <summary>At dispose: the row goes at once, so the fleet need not wait for it to expire (if the database answers).</summary>
    private void Leave()
    {
        if (_failing)
        {
            return; // the row expires
        }

        try
        {
            using var connection = _context.DataSource.OpenConnection();
            using var command = new NpgsqlCommand(_context.ClusterSql.Leave, connection) { Parameters = { Text(_context.QueueName), Text(Name) } };
            command.ExecuteNonQuery();
        }
        catch (Exception ex) when (ex is NpgsqlException or InvalidOperationException or TimeoutException)
        {
            _context.Logger.StorageUnavailable(_context.QueueName, Loop, TimeSpan.Zero, ex);
        }
    }

    private static NpgsqlParameter<string> Text(string value) => new() { TypedValue = value };

    /// <summary>A request waiting for permits, oldest first.</summary>
    private sealed class Waiter(int permits)
    {
        public int Permits { get; } = permits;

        public TaskCompletionSource<RateLimitLease> Completion { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public LinkedListNode<Waiter>? Node { get; set; }

        public CancellationTokenRegistration Registration { get; set; }
    }

    /// <summary>Permits held until disposed (once).</summary>
    private sealed class Lease(ClusterRateLimiter owner, int permits) : RateLimitLease
    {
        private int _released;

        public override bool IsAcquired => true;

        public override IEnumerable<string> MetadataNames => [];

        public override bool TryGetMetadata(string metadataName, out object? metadata)
        {
            metadata = null;
            return false;
        }

        protected override void Dispose(bool disposing)
        {
            if (Interlocked.Exchange(ref _released, 1) == 0)
            {
                owner.Release(permits);
            }

            base.Dispose(disposing);
        }
    }

    /// <summary>A refused request: why (<see cref="MetadataName.ReasonPhrase"/>) and, when tokens are what it lacked, when to try again (<see cref="MetadataName.RetryAfter"/>).</summary>
    private sealed class Refusal(string reason, TimeSpan? retryAfter) : RateLimitLease
    {
        public override bool IsAcquired => false;

        public override IEnumerable<string> MetadataNames =>
            retryAfter is null ? [MetadataName.ReasonPhrase.Name] : [MetadataName.ReasonPhrase.Name, MetadataName.RetryAfter.Name];

        public override bool TryGetMetadata(string metadataName, out object? metadata)
        {
            if (metadataName == MetadataName.ReasonPhrase.Name)
            {
                metadata = reason;
                return true;
            }

            if (metadataName == MetadataName.RetryAfter.Name && retryAfter is { } after)
            {
                metadata = after;
                return true;
            }

            metadata = null;
            return false;
        }
    }
}
