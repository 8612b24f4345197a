namespace BoundedWork.Hosting;

/// <summary>
/// What a diagnosis of the shared ThreadPool found inside the app (the starvation sentinel of BoundedWork.Diagnostics
/// makes it): starved or not, the code that holds the pool's threads, the evidence and the advice, as <c>bw doctor</c>
/// words them.
/// </summary>
public sealed class ThreadPoolDiagnosis
{
    /// <summary>Gets when the diagnosis was made.</summary>
    public required DateTimeOffset DiagnosedAt { get; init; }

    /// <summary>
    /// Gets a value indicating whether the pool was starved: work waited for a pool thread in every reading, and at
    /// least half of the pool threads running work sat blocked in a wait (a busy pool whose threads compute is not starved).
    /// </summary>
    public required bool IsStarved { get; init; }

    /// <summary>Gets the verdict in one sentence: "STARVED: 47 of 52 pool threads are blocked in OrdersController.Get (GET orders/{id}) ...".</summary>
    public required string Verdict { get; init; }

    /// <summary>Gets the places the pool threads were blocked in, most threads first: the code, its caller and the wait in a user's words.</summary>
    public required IReadOnlyList<string> BlockingSites { get; init; }

    /// <summary>Gets the readings the verdict rests on, one sentence each.</summary>
    public required IReadOnlyList<string> Evidence { get; init; }

    /// <summary>Gets what to do, one line each (lines indented by four spaces are code).</summary>
    public required IReadOnlyList<string> Advice { get; init; }
}

/// <summary>
/// The last ThreadPool diagnosis made inside the app, for the places operators look (the admin console's
/// <c>/threadpool</c>, its dashboard, <c>bw threadpool</c>). The starvation sentinel of BoundedWork.Diagnostics
/// (<c>services.AddStarvationSentinel()</c>) registers it.
/// </summary>
public interface IThreadPoolDiagnosisSource
{
    /// <summary>Gets the last diagnosis, or <see langword="null"/> before the first.</summary>
    ThreadPoolDiagnosis? LastDiagnosis { get; }

    /// <summary>
    /// Gets why the app can detect starvation but not diagnose it (no diagnostics port, for example), or
    /// <see langword="null"/> when it can do both.
    /// </summary>
    string? Limitation { get; }
}
