using System.Globalization;
using System.Text.RegularExpressions;

namespace BoundedWork.Diagnostics.Internal;

/// <summary>What a pool thread was doing in most of its samples.</summary>
internal enum PoolThreadState
{
    /// <summary>Waiting for work in the pool's own idle wait.</summary>
    Idle,

    /// <summary>Running a work item that sits in a blocking wait (sleep, lock, event, task wait, synchronous I/O).</summary>
    Blocked,

    /// <summary>Running a work item on the CPU.</summary>
    Running,
}

/// <summary>
/// A place in user code where pool threads sit blocked: the method (or, when the stacks name only generated code, the
/// action the threads were running), what calls it, and the wait it is in.
/// </summary>
internal sealed record BlockingSite(string Method, string? CalledFrom, string Wait, int Threads)
{
    /// <summary>Gets the wait in a user's words: "waits on Task.Result: sync over async".</summary>
    public string Meaning => Diagnosis.Meaning(Wait);

    /// <summary>Gets a value indicating whether <see cref="Method"/> names the work the threads ran (an action), not a method of their stacks.</summary>
    public bool FromWork { get; init; }
}

/// <summary>An executor as the BoundedWork meter showed it during the run (last reading).</summary>
internal sealed record ExecutorReading(string Name, double QueueLength, double Workers, double Busy);

/// <summary>The verdict of <c>bw doctor</c>, with the evidence it rests on.</summary>
internal sealed record DoctorReport(
    int ProcessId,
    bool Starved,
    string Verdict,
    IReadOnlyList<string> Evidence,
    int PoolThreads,
    int BlockedPoolThreads,
    int RunningPoolThreads,
    int IdlePoolThreads,
    IReadOnlyList<double> PoolThreadCounts,
    IReadOnlyList<double> PoolQueueLengths,
    IReadOnlyList<double> CompletedPerSecond,
    IReadOnlyList<BlockingSite> BlockingSites,
    IReadOnlyList<ExecutorReading> Executors,
    IReadOnlyList<string> Advice,
    IReadOnlyList<PoolStack> PoolStacks);

/// <summary>A stack that pool threads were seen in (each thread's most frequent one), innermost frame first.</summary>
internal sealed record PoolStack(int Threads, string State, IReadOnlyList<string> Frames);

/// <summary>
/// Turns counters and stack samples into a verdict. <b>Starved</b> means both: work waited for a pool thread in every
/// counter reading (the pool's queue length was above zero each time), and at least half of the pool threads that
/// were running work items sat blocked in a wait. Either alone is not starvation: a busy pool with a queue whose
/// threads compute is CPU-bound; blocked threads with an empty queue are waste, not yet starvation. Idle pool
/// threads do not count either way: the pool's thread-count controller can keep some parked while work is queued,
/// and that work waits all the same.
/// </summary>
internal static partial class Diagnosis
{
    /// <summary>A count of items in words: "1 item", "3 items" (a reading of the meter, rounded).</summary>
    public static string Items(double count) =>
        string.Create(CultureInfo.InvariantCulture, $"{count:0} {(Math.Round(count) == 1 ? "item" : "items")}");

    private static readonly string[] s_waits =
    [
        "Thread.Sleep", "Thread.SleepInternal", "Thread.Join", "Monitor.Wait", "Monitor.Enter", "Monitor.ReliableEnter", "Lock.Enter",
        "WaitHandle.Wait", "WaitHandle.WaitOne", "WaitHandle.WaitAny", "WaitHandle.WaitAll", "ManualResetEventSlim.Wait", "SemaphoreSlim.Wait",
        "Task.Wait", "Task.InternalWait", "Task.SpinThenBlockingWait", "Task.InternalWaitCore", "TaskAwaiter.GetResult", "Task`1.get_Result",
        "CountdownEvent.Wait", "Barrier.SignalAndWait", "ReaderWriterLockSlim.Enter", "Socket.Receive", "Socket.Send",
        "Socket.Connect", "Socket.Accept", "Stream.Read", "Stream.Write", "FileStream.Read", "Process.WaitForExit", "Console.ReadLine",
        "Lock.TryEnterSlow", "Lock.EnterScope", "WaitSubsystem.Wait", "LowLevelMonitor.Wait", "Task`1.GetResultCore",
    ];

    /// <summary>
    /// Reads counters and stacks into a verdict. <paramref name="threadWork"/>, when known, names the work (an MVC
    /// action and its route) each OS thread was running: it names a blocked thread's site when its stack shows only
    /// code the compiler or the framework generated.
    /// </summary>
    public static DoctorReport Diagnose(int processId, IReadOnlyList<CounterSample> counters, IReadOnlyList<ThreadSample> samples, IReadOnlyDictionary<int, string>? threadWork = null)
    {
        var threadCounts = Series(counters, CounterNames.PoolThreads);
        var queueLengths = Series(counters, CounterNames.PoolQueue);
        var completed = Series(counters, CounterNames.PoolCompleted);

        var generatedWork = GeneratedWork(samples, threadWork);
        var states = new Dictionary<int, PoolThreadState>();
        var stacks = new Dictionary<string, (int Threads, PoolThreadState State, IReadOnlyList<string> Frames)>(StringComparer.Ordinal);
        var sites = new Dictionary<(string Method, string? Caller, string Wait, bool FromWork), HashSet<int>>();
        foreach (var thread in samples.Where(s => IsPoolWorker(s.Frames)).GroupBy(s => s.ThreadId))
        {
            var classified = thread.Select(s => (Sample: s, State: Classify(s.Frames))).ToList();
            var state = classified.GroupBy(c => c.State).OrderByDescending(g => g.Count()).ThenBy(g => g.Key).First().Key;
            states[thread.Key] = state;
            var usual = classified.Where(c => c.State == state).GroupBy(c => string.Join('|', c.Sample.Frames.Select(f => f.Method)))
                .OrderByDescending(g => g.Count()).First();
            stacks[usual.Key] = stacks.TryGetValue(usual.Key, out var seen)
                ? (seen.Threads + 1, state, seen.Frames)
                : (1, state, [.. usual.First().Sample.Frames.Select(f => $"{f.Method} [{f.Module}]")]);
            if (state != PoolThreadState.Blocked)
            {
                continue;
            }

            // The thread's most frequent blocked place.
            var work = threadWork is not null && threadWork.TryGetValue(thread.Key, out var w) ? w : null;
            var place = classified.Where(c => c.State == PoolThreadState.Blocked).Select(c => Site(c.Sample.Frames, work ?? WorkOf(c.Sample.Frames, generatedWork)))
                .GroupBy(p => p).OrderByDescending(g => g.Count()).First().Key;
            if (!sites.TryGetValue(place, out var threads))
            {
                sites[place] = threads = [];
            }

            threads.Add(thread.Key);
        }

        var pool = states.Count;
        var blocked = states.Values.Count(s => s == PoolThreadState.Blocked);
        var running = states.Values.Count(s => s == PoolThreadState.Running);
        var idle = states.Values.Count(s => s == PoolThreadState.Idle);
        var blockingSites = sites.Select(s => new BlockingSite(s.Key.Method, s.Key.Caller, s.Key.Wait, s.Value.Count) { FromWork = s.Key.FromWork })
            .OrderByDescending(s => s.Threads).ToList();

        var queuedAlways = queueLengths.Count >= 2 && queueLengths.All(q => q > 0);
        var mostlyBlocked = blocked > 0 && blocked * 2 >= blocked + running;
        var starved = queuedAlways && mostlyBlocked;

        var evidence = new List<string>();
        evidence.Add(queueLengths.Count == 0
            ? "The runtime sent no ThreadPool queue readings."
            : queuedAlways
                ? $"Work waited for a pool thread in every one of {queueLengths.Count} readings (queue length {Range(queueLengths)})."
                : $"The pool's queue was empty in {queueLengths.Count(q => q <= 0)} of {queueLengths.Count} readings (queue length {Range(queueLengths)}).");
        if (threadCounts.Count > 0)
        {
            var grew = threadCounts[^1] - threadCounts[0];
            evidence.Add($"Pool threads: {Range(threadCounts)}{(grew > 0 ? $", {grew:0} added during the run: the pool is injecting threads because its work does not finish" : "")}.");
        }

        if (completed.Count > 0)
        {
            evidence.Add($"Work items completed per second: {Range(completed)}.");
        }

        evidence.Add(pool == 0
            ? "No pool thread was seen in the stack samples."
            : $"{blocked} of {pool} pool threads were blocked in a wait while running a work item (running on the CPU: {running}, idle: {idle}).");
        if (queuedAlways && idle > 0)
        {
            evidence.Add($"Idle pool threads while work was queued: {idle} (the pool keeps some parked; the queued work waits all the same).");
        }
        foreach (var site in blockingSites.Take(3))
        {
            evidence.Add($"{site.Threads} of {pool} pool threads are blocked in {site.Method}{(site.CalledFrom is null ? "" : $", called from {site.CalledFrom}")}: {site.Meaning}.");
        }

        var executors = counters.Where(c => c.Executor is not null).GroupBy(c => c.Executor!)
            .Select(g => new ExecutorReading(g.Key, Last(g, "boundedwork.queue.length"), Last(g, "boundedwork.workers"), Last(g, "boundedwork.workers.busy")))
            .ToList();

        var verdict = starved
            ? blockingSites.Count > 0
                ? $"STARVED: {blockingSites[0].Threads} of {pool} pool threads are blocked in {blockingSites[0].Method}{(blockingSites[0].CalledFrom is null ? "" : $", called from {blockingSites[0].CalledFrom}")} ({blockingSites[0].Meaning}), and work is queuing behind them."
                : $"STARVED: {blocked} of {pool} pool threads are blocked, and work is queuing behind them."
            : !queuedAlways
                ? "Not starved: work items found a pool thread."
                : $"Not starved: work queued, but only {blocked} of the {blocked + running} pool threads running work were blocked; the pool is busy rather than blocked.";
        return new DoctorReport(processId, starved, verdict, evidence, pool, blocked, running, idle, threadCounts, queueLengths, completed, blockingSites, executors, Advise(starved, blockingSites, executors),
            [.. stacks.Values.OrderByDescending(s => s.Threads).Select(s => new PoolStack(s.Threads, s.State.ToString().ToLowerInvariant(), s.Frames))]);
    }

    /// <summary>
    /// Makes a method name readable: no parameters or namespace, nested types with dots, lambdas and async methods
    /// named after the method that declares them: <c>CallbackServer.MapEndpoints (lambda)</c>.
    /// </summary>
    public static string Readable(string method)
    {
        var name = WithoutTypeArguments(method);
        var paren = name.IndexOf('(', StringComparison.Ordinal);
        if (paren > 0)
        {
            name = name[..paren];
        }

        name = Closure().Replace(name, ".");
        name = Lambda().Replace(name, m => $"{m.Groups[1].Value} (lambda)");
        name = AsyncMachine().Replace(name, m => $".{m.Groups[1].Value} (async)");
        name = name.Replace('+', '.');
        var space = name.IndexOf(' ', StringComparison.Ordinal);
        var (head, suffix) = space < 0 ? (name, "") : (name[..space], name[space..]);
        var parts = head.Split('.');
        return (parts.Length > 2 ? string.Join('.', parts[^2..]) : head) + suffix;
    }

    private static List<double> Series(IReadOnlyList<CounterSample> counters, string name) =>
        [.. counters.Where(c => c.Executor is null && c.Name == name).OrderBy(c => c.At).Select(c => c.Value)];

    private static double Last(IEnumerable<CounterSample> samples, string name) =>
        samples.Where(s => s.Name == name).OrderBy(s => s.At).Select(s => s.Value).LastOrDefault();

    private static string Range(List<double> values) =>
        values.Min() == values.Max()
            ? values[0].ToString("0.#", CultureInfo.InvariantCulture)
            : $"{values.Min().ToString("0.#", CultureInfo.InvariantCulture)} to {values.Max().ToString("0.#", CultureInfo.InvariantCulture)}";

    private static bool IsPoolWorker(IReadOnlyList<Frame> frames) =>
        frames.Any(f => f.Method.Contains("PortableThreadPool+WorkerThread", StringComparison.Ordinal)
            || f.Method.Contains("ThreadPoolWorkQueue.Dispatch", StringComparison.Ordinal));

    private static PoolThreadState Classify(IReadOnlyList<Frame> frames)
    {
        if (!frames.Any(f => f.Method.Contains("ThreadPoolWorkQueue.Dispatch", StringComparison.Ordinal)))
        {
            return PoolThreadState.Idle;
        }

        // A wait among the framework frames above the first user frame (or above the dispatcher when there is none).
        foreach (var frame in frames)
        {
            if (frame.Method.Contains("ThreadPoolWorkQueue.Dispatch", StringComparison.Ordinal) || !IsFramework(frame))
            {
                break;
            }

            if (IsWait(frame.Method))
            {
                return PoolThreadState.Blocked;
            }
        }

        return PoolThreadState.Running;
    }

    private static (string Method, string? Caller, string Wait, bool FromWork) Site(IReadOnlyList<Frame> frames, string? work)
    {
        // The outermost wait above the first frame that is not the framework's: the call the user's code made
        // (Task.Result, not the monitor it ends in).
        string? wait = null;
        foreach (var frame in frames)
        {
            if (!IsFramework(frame) || frame.Method.Contains("ThreadPoolWorkQueue.Dispatch", StringComparison.Ordinal))
            {
                break;
            }

            if (IsWait(frame.Method))
            {
                wait = Readable(frame.Method);
            }
        }

        wait ??= frames.FirstOrDefault(f => IsFramework(f) && IsWait(f.Method)) is { } w ? Readable(w.Method) : "a wait";
        var user = frames.Where(f => !IsFramework(f) && !IsGenerated(f.Method)).Select(f => Readable(f.Method)).Distinct().Take(2).ToList();
        if (work is not null)
        {
            // The work the thread was running names what the stack leaves out (an action inlined into MVC's
            // compiled invoker), and stands beside a user method it calls.
            return user.Count == 0 || work.StartsWith(user[0] + " ", StringComparison.Ordinal)
                ? (work, null, wait, true)
                : (user[0], work, wait, false);
        }

        return user.Count switch
        {
            0 => (wait, null, wait, false),
            1 => (user[0], null, wait, false),
            _ => (user[0], user[1], wait, false),
        };
    }

    /// <summary>
    /// The work each generated method stands for: MVC compiles one invoker per action, so a thread seen running an
    /// action names the generated frame it blocks under (<c>dynamicClass.lambda_method3</c>) for every thread blocked
    /// under the same frame, also those whose action began before anyone watched. The most frequent pairing wins.
    /// </summary>
    private static Dictionary<string, string> GeneratedWork(IReadOnlyList<ThreadSample> samples, IReadOnlyDictionary<int, string>? threadWork)
    {
        var votes = new Dictionary<(string Generated, string Work), int>();
        if (threadWork is not null)
        {
            foreach (var sample in samples)
            {
                if (threadWork.TryGetValue(sample.ThreadId, out var work) && sample.Frames.FirstOrDefault(f => IsGenerated(f.Method)) is { } generated)
                {
                    votes[(generated.Method, work)] = votes.GetValueOrDefault((generated.Method, work)) + 1;
                }
            }
        }

        return votes.GroupBy(v => v.Key.Generated, StringComparer.Ordinal)
            .ToDictionary(g => g.Key, g => g.OrderByDescending(v => v.Value).ThenBy(v => v.Key.Work, StringComparer.Ordinal).First().Key.Work, StringComparer.Ordinal);
    }

    private static string? WorkOf(IReadOnlyList<Frame> frames, Dictionary<string, string> generatedWork) =>
        generatedWork.Count > 0 && frames.FirstOrDefault(f => IsGenerated(f.Method)) is { } generated && generatedWork.TryGetValue(generated.Method, out var work) ? work : null;

    /// <summary>An MVC action in a user's words: <c>OrdersController.Get (route orders/{id})</c>, from its display name and attribute route.</summary>
    public static string ActionLabel(string displayName, string? routeTemplate)
    {
        var assembly = displayName.LastIndexOf(" (", StringComparison.Ordinal);
        var name = Readable(assembly > 0 ? displayName[..assembly] : displayName);
        return string.IsNullOrEmpty(routeTemplate) ? $"{name} (action)" : $"{name} (route {routeTemplate})";
    }

    /// <summary>
    /// Whether a method was generated by the compiler or the runtime rather than written: a dynamic method (MVC's
    /// compiled action invoker, <c>dynamicClass.lambda_method3</c>), an IL stub. Advice never names one.
    /// </summary>
    public static bool IsGenerated(string method) =>
        method.StartsWith("dynamicClass", StringComparison.Ordinal) || method.Contains("lambda_method", StringComparison.Ordinal)
        || method.StartsWith("ILStubClass", StringComparison.Ordinal) || method.StartsWith('(');

    /// <summary>A wait (a readable framework method) in a user's words.</summary>
    public static string Meaning(string wait) => wait switch
    {
        "Task`1.get_Result" or "Task`1.GetResultCore" => "waits on Task.Result: sync over async",
        "TaskAwaiter.GetResult" => "waits on GetAwaiter().GetResult(): sync over async",
        "Task.Wait" => "waits on Task.Wait: sync over async",
        // Task<T>.Result and GetAwaiter().GetResult() wait in InternalWait; the JIT often inlines them into the caller.
        "Task.InternalWait" => "waits on Task.Result (or GetAwaiter().GetResult()): sync over async",
        "Task.InternalWaitCore" or "Task.SpinThenBlockingWait" => "waits on a task (Task.Wait or Task.Result): sync over async",
        "Thread.Sleep" or "Thread.SleepInternal" => "polls with Thread.Sleep (or pauses in it)",
        "Monitor.Enter" or "Monitor.ReliableEnter" or "Lock.Enter" or "Lock.TryEnterSlow" or "Lock.EnterScope" or "ReaderWriterLockSlim.Enter" => $"waits for a lock ({wait})",
        _ when wait.StartsWith("Socket.", StringComparison.Ordinal) || wait.Contains("Stream.", StringComparison.Ordinal) => $"synchronous I/O ({wait})",
        "a wait" => "waits",
        _ => $"waits in {wait}",
    };

    /// <summary>Whether a frame is one of the blocking calls (by type and method name, so <c>ReadAsync</c> is not <c>Read</c>).</summary>
    private static bool IsWait(string method)
    {
        var name = WithoutTypeArguments(method);
        return s_waits.Any(w => name.Contains(w + "(", StringComparison.Ordinal));
    }

    /// <summary>A method's name without the type arguments of its generic types: <c>Task`1[System.Int32].GetResultCore(bool)</c> is <c>Task`1.GetResultCore(bool)</c>.</summary>
    private static string WithoutTypeArguments(string method)
    {
        var paren = method.IndexOf('(', StringComparison.Ordinal);
        var head = paren < 0 ? method : method[..paren];
        if (!head.Contains('[', StringComparison.Ordinal))
        {
            return method;
        }

        var result = new System.Text.StringBuilder(method.Length);
        var depth = 0;
        foreach (var c in head)
        {
            if (c == '[')
            {
                depth++;
            }
            else if (c == ']')
            {
                depth = Math.Max(0, depth - 1);
            }
            else if (depth == 0)
            {
                result.Append(c);
            }
        }

        return paren < 0 ? result.ToString() : result.Append(method, paren, method.Length - paren).ToString();
    }

    /// <summary>The runtime, ASP.NET Core and Microsoft.Extensions: code the app did not write.</summary>
    private static bool IsFramework(Frame frame)
    {
        var module = frame.Module;
        if (module.Length > 0)
        {
            return module.StartsWith("System.", StringComparison.OrdinalIgnoreCase) || module.StartsWith("Microsoft.", StringComparison.OrdinalIgnoreCase)
                || module is "System" or "netstandard" or "mscorlib";
        }

        return frame.Method.StartsWith("System.", StringComparison.Ordinal) || frame.Method.StartsWith("Microsoft.", StringComparison.Ordinal) || frame.Method == "?";
    }

    private static List<string> Advise(bool starved, List<BlockingSite> sites, IReadOnlyList<ExecutorReading> executors)
    {
        var advice = new List<string>();
        if (starved)
        {
            var first = sites.Count > 0 ? sites[0] : null;
            var named = first is not null && first.Method != first.Wait && !first.FromWork;
            var site = first is null ? "the blocking call" : first.Method;
            if (first is not null && first.Meaning.EndsWith("sync over async", StringComparison.Ordinal))
            {
                advice.Add($"Await the task in {site} instead of blocking on it (async all the way down: the action returns a Task and awaits). A call that can only block goes onto a BoundedExecutor.");
            }

            advice.Add($"Move {(named ? site : $"the blocking call in {site}")} off the shared pool onto a BoundedExecutor (threads of its own, a bounded queue):");
            advice.Add("    builder.Services.AddBoundedExecutor(\"legacy\", o => o.WorkerCount = 16);");
            advice.Add(named ? $"    await executor.RunAsync(() => {site}(...));" : "    await executor.RunAsync(() => theBlockingCall(...));");
            advice.Add("For a fire-and-forget side effect, executor.TryExecute(...) instead. Until then the pool grows by a thread or two a second; raising ThreadPool.SetMinThreads hides the cause and buys time at best.");
        }

        foreach (var executor in executors.Where(e => e.Busy >= e.Workers && e.Workers > 0 && e.QueueLength > 0))
        {
            advice.Add($"Executor {executor.Name}: all {executor.Workers:0} workers busy and {Items(executor.QueueLength)} queued; 'bw resize {executor.Name} N' adds workers now (needs its socket).");
        }

        if (advice.Count == 0)
        {
            advice.Add("Nothing to do for the ThreadPool. 'bw list' and 'bw top' show the executors.");
        }

        return advice;
    }

    [GeneratedRegex(@"\+<>c(__DisplayClass[0-9_]+)?\.")]
    private static partial Regex Closure();

    [GeneratedRegex(@"<+([A-Za-z0-9_]+)>\$?>?b__[0-9_]+")]
    private static partial Regex Lambda();

    [GeneratedRegex(@"\+<([A-Za-z0-9_]+)>d__[0-9_]+\.MoveNext")]
    private static partial Regex AsyncMachine();
}
