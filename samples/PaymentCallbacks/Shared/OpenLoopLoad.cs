using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace PaymentCallbacks.Shared;

/// <summary>
/// Sends requests at a fixed arrival rate whatever the server does (an open loop): request <c>i</c> is due at
/// <c>start + i / rate</c>, a dedicated pacing thread starts it then (or at once, if the pacer fell behind), and its
/// latency runs from that intended time to the end of the response. A closed-loop tool waits for an answer before
/// sending again, so a stalled server slows its own load down and hides the stall (coordinated omission).
/// </summary>
internal sealed class OpenLoopLoad
{
    /// <summary>The merchants a load is spread over unless told otherwise.</summary>
    public const int DefaultMerchants = 10;

    private const byte Pending = 0;
    private const byte Ok = 1;
    private const byte Unavailable = 2;
    private const byte OtherStatus = 3;
    private const byte Error = 4;

    private readonly HttpClient _client;
    private readonly Uri _url;
    private readonly HttpMethod _method;
    private readonly double _rate;
    private readonly TimeSpan _duration;
    private readonly int _count;
    private readonly int _merchants;
    private readonly long[] _intended;
    private readonly double[] _latencyMs;
    private readonly byte[] _outcome;
    private readonly TaskCompletionSource _allDone = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly TaskCompletionSource _paced = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _abort = new();
    private long _outstanding = 1;

    /// <summary>Initializes a run of <paramref name="rate"/> requests per second for <paramref name="duration"/>.</summary>
    /// <param name="client">The client to send with (its handler bounds the connections).</param>
    /// <param name="url">The target.</param>
    /// <param name="method">GET or POST (a POST carries a small JSON callback body).</param>
    /// <param name="rate">Requests per second; must be positive.</param>
    /// <param name="duration">How long to send for; must be positive.</param>
    /// <param name="merchants">How many merchants the callbacks are spread over, in turn (<c>merchant-0</c>, <c>merchant-1</c>, ...): the server's tenants.</param>
    public OpenLoopLoad(HttpClient client, Uri url, HttpMethod method, double rate, TimeSpan duration, int merchants = DefaultMerchants)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(rate);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(merchants);
        _merchants = merchants;
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(duration, TimeSpan.Zero);
        _client = client;
        _url = url;
        _method = method;
        _rate = rate;
        _duration = duration;
        _count = checked((int)Math.Ceiling(rate * duration.TotalSeconds));
        _intended = new long[_count];
        _latencyMs = new double[_count];
        _outcome = new byte[_count];
    }

    /// <summary>Creates a client for load: many pooled connections, a long timeout, no proxy.</summary>
    /// <param name="maxConnections">The most connections to the server at once.</param>
    /// <returns>The client.</returns>
    public static HttpClient CreateClient(int maxConnections) => new(new SocketsHttpHandler
    {
        MaxConnectionsPerServer = maxConnections,
        UseProxy = false,
        ConnectTimeout = TimeSpan.FromSeconds(10),
        PooledConnectionIdleTimeout = TimeSpan.FromMinutes(2),
    })
    {
        Timeout = TimeSpan.FromSeconds(30),
    };

    /// <summary>Sends the whole run, then waits up to <paramref name="drainTimeout"/> for the last answers.</summary>
    /// <param name="drainTimeout">How long to wait for outstanding requests after the last one was sent.</param>
    /// <param name="cancellationToken">Stops sending early.</param>
    /// <returns>The counts and latency percentiles; requests still unanswered are counted as unfinished.</returns>
    public async Task<LoadReport> RunAsync(TimeSpan drainTimeout, CancellationToken cancellationToken)
    {
        var start = Stopwatch.GetTimestamp();
        var pacer = new Thread(() =>
        {
            try
            {
                Pace(start, cancellationToken);
            }
            finally
            {
                _paced.TrySetResult();
            }
        })
        { IsBackground = true, Name = "open-loop pacer" };
        pacer.Start();
        await _paced.Task.ConfigureAwait(false);
        if (Interlocked.Decrement(ref _outstanding) == 0)
        {
            _allDone.TrySetResult();
        }

        await Task.WhenAny(_allDone.Task, Task.Delay(drainTimeout, CancellationToken.None)).ConfigureAwait(false);
        var report = Summarize();
        await _abort.CancelAsync().ConfigureAwait(false);
        return report;
    }

    /// <summary>Writes one line per request: intended send time (s from start), latency (ms) and outcome.</summary>
    /// <param name="writer">The CSV destination.</param>
    public void WriteCsv(TextWriter writer)
    {
        writer.WriteLine("sent_s,latency_ms,outcome");
        var first = _count > 0 ? _intended[0] : 0;
        for (var i = 0; i < _count; i++)
        {
            var outcome = Volatile.Read(ref _outcome[i]);
            if (outcome is Pending || _intended[i] == 0)
            {
                continue;
            }

            writer.WriteLine(string.Create(
                CultureInfo.InvariantCulture,
                $"{Stopwatch.GetElapsedTime(first, _intended[i]).TotalSeconds:F3},{_latencyMs[i]:F3},{OutcomeName(outcome)}"));
        }
    }

    private static string OutcomeName(byte outcome) => outcome switch
    {
        Ok => "ok",
        Unavailable => "503",
        OtherStatus => "status",
        _ => "error",
    };

    private void Pace(long start, CancellationToken cancellationToken)
    {
        var ticksPerRequest = Stopwatch.Frequency / _rate;
        for (var i = 0; i < _count && !cancellationToken.IsCancellationRequested; i++)
        {
            var due = start + (long)(i * ticksPerRequest);
            while (Stopwatch.GetTimestamp() < due)
            {
                Thread.Sleep(1);
            }

            _intended[i] = due;
            Interlocked.Increment(ref _outstanding);
            _ = SendAsync(i, due);
        }
    }

    private async Task SendAsync(int index, long intended)
    {
        byte outcome;
        try
        {
            using var request = new HttpRequestMessage(_method, _url);
            if (_method == HttpMethod.Post)
            {
                request.Content = new StringContent(
                    string.Create(CultureInfo.InvariantCulture, $$"""{"orderId":{{index}},"amount":12.5,"merchantId":"merchant-{{index % _merchants}}"}"""),
                    System.Text.Encoding.UTF8,
                    "application/json");
            }

            using var response = await _client.SendAsync(request, _abort.Token).ConfigureAwait(false);
            _ = await response.Content.ReadAsByteArrayAsync(_abort.Token).ConfigureAwait(false);
            outcome = (int)response.StatusCode is >= 200 and < 300 ? Ok
                : response.StatusCode == HttpStatusCode.ServiceUnavailable ? Unavailable
                : OtherStatus;
        }
        catch (Exception)
        {
            outcome = Error;
        }

        _latencyMs[index] = Stopwatch.GetElapsedTime(intended).TotalMilliseconds;
        Volatile.Write(ref _outcome[index], outcome);
        if (Interlocked.Decrement(ref _outstanding) == 0)
        {
            _allDone.TrySetResult();
        }
    }

    private LoadReport Summarize()
    {
        long sent = 0, ok = 0, unavailable = 0, other = 0, errors = 0, unfinished = 0;
        var latencies = new List<double>(_count);
        for (var i = 0; i < _count; i++)
        {
            if (_intended[i] == 0)
            {
                continue;
            }

            sent++;
            var outcome = Volatile.Read(ref _outcome[i]);
            switch (outcome)
            {
                case Pending:
                    unfinished++;
                    continue;
                case Ok:
                    ok++;
                    break;
                case Unavailable:
                    unavailable++;
                    break;
                case OtherStatus:
                    other++;
                    break;
                default:
                    errors++;
                    continue;
            }

            latencies.Add(_latencyMs[i]);
        }

        latencies.Sort();
        return new LoadReport(
            _url.ToString(), _rate, _duration.TotalSeconds, sent, ok, unavailable, other, errors, unfinished,
            Percentile(latencies, 0.50), Percentile(latencies, 0.90), Percentile(latencies, 0.99),
            latencies.Count > 0 ? latencies[^1] : 0);
    }

    private static double Percentile(List<double> sorted, double p) =>
        sorted.Count == 0 ? 0 : sorted[Math.Min(sorted.Count - 1, (int)Math.Ceiling(p * sorted.Count) - 1)];
}
