using System.Buffers;
using System.IO.Pipelines;
using System.Net.Mime;
using BoundedWork.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The console's request handlers. They are plain request delegates (no model binding), and complete without
/// yielding whenever the request body has already arrived, so each request needs one ThreadPool dispatch and no
/// more: that keeps them as cheap as possible when the pool is starved.
/// </summary>
internal sealed class AdminApi(IBoundedExecutorRegistry registry, AdminSampler sampler, AdminMetrics metrics, ILogger logger)
{
    public Task ListExecutors(HttpContext context)
    {
        var history = WantsHistory(context);
        var executors = new List<ExecutorResponse>(registry.Names.Count);
        foreach (var name in registry.Names)
        {
            executors.Add(Describe(registry.GetExecutor(name), history));
        }

        return context.Response.WriteAsJsonAsync(new ExecutorListResponse(DateTimeOffset.UtcNow, executors), AdminJsonContext.Default.ExecutorListResponse);
    }

    public Task GetExecutor(HttpContext context)
    {
        var name = RouteName(context);
        return registry.TryGetExecutor(name, out var executor)
            ? context.Response.WriteAsJsonAsync(Describe(executor, WantsHistory(context)), AdminJsonContext.Default.ExecutorResponse)
            : NotFound(name).ExecuteAsync(context);
    }

    public Task GetThreadPool(HttpContext context) =>
        context.Response.WriteAsJsonAsync(sampler.GetThreadPool(WantsHistory(context)), AdminJsonContext.Default.ThreadPoolResponse);

    public Task PutWorkers(HttpContext context) => ChangeSettings(context, workersOnly: true);

    public Task PatchSettings(HttpContext context) => ChangeSettings(context, workersOnly: false);

    public static Task MethodNotAllowed(HttpContext context, string allow)
    {
        context.Response.Headers.Allow = allow;
        return TypedResults.Problem(
            $"{context.Request.Method} is not allowed on {context.Request.Path}; allowed: {allow}.",
            statusCode: StatusCodes.Status405MethodNotAllowed,
            title: "Method not allowed").ExecuteAsync(context);
    }

    private async Task ChangeSettings(HttpContext context, bool workersOnly)
    {
        var name = RouteName(context);
        var user = User(context);
        var remote = context.Connection.RemoteIpAddress?.ToString() ?? "unknown";

        if (!context.Request.HasJsonContentType())
        {
            await Refuse(context, name, user, remote, "unsupported_media_type", TypedResults.Problem(
                $"Send the settings as JSON: the Content-Type must be {MediaTypeNames.Application.Json} (was '{context.Request.ContentType ?? "none"}').",
                statusCode: StatusCodes.Status415UnsupportedMediaType,
                title: "Unsupported media type")).ConfigureAwait(false);
            return;
        }

        if (string.IsNullOrWhiteSpace(context.Request.Headers[BoundedWorkAdminOptions.RequestHeaderName]))
        {
            await Refuse(context, name, user, remote, "missing_header", TypedResults.Problem(
                $"Changes must carry the request header '{BoundedWorkAdminOptions.RequestHeaderName}' (any non-empty value), which a cross-site form or a simple cross-origin request cannot add.",
                statusCode: StatusCodes.Status400BadRequest,
                title: "Missing request header",
                extensions: [new("header", BoundedWorkAdminOptions.RequestHeaderName)])).ConfigureAwait(false);
            return;
        }

        if (!registry.TryGetExecutor(name, out var executor))
        {
            await Refuse(context, name, user, remote, "not_found", NotFound(name)).ConfigureAwait(false);
            return;
        }

        var (body, tooLarge) = await ReadBody(context.Request.BodyReader, context.RequestAborted).ConfigureAwait(false);
        Dictionary<string, string[]> errors;
        BoundedExecutorSettingsChange? change;
        try
        {
            (change, errors) = tooLarge
                ? (null, new Dictionary<string, string[]> { [SettingsRequest.Body] = [$"The request body is larger than {SettingsRequest.MaxBodyBytes} bytes."] })
                : SettingsRequest.Parse(body, workersOnly, executor.MaxWorkerCount);
        }
        finally
        {
            context.Request.BodyReader.AdvanceTo(body.End);
        }

        if (change is null)
        {
            await Refuse(context, executor.Name, user, remote, "invalid", TypedResults.ValidationProblem(
                errors,
                $"The settings of executor '{executor.Name}' are unchanged: {string.Join(" ", errors.Values.SelectMany(static e => e))}",
                title: "Invalid settings")).ConfigureAwait(false);
            return;
        }

        BoundedExecutorReconfiguration result;
        try
        {
            result = executor.Reconfigure(change);
        }
        catch (InvalidOperationException) when (executor.IsShutdown)
        {
            await Refuse(context, executor.Name, user, remote, "shut_down", TypedResults.Problem(
                $"Executor '{executor.Name}' is shutting down or shut down; its settings can no longer change.",
                statusCode: StatusCodes.Status409Conflict,
                title: "Executor shut down",
                extensions: [new("executor", executor.Name)])).ConfigureAwait(false);
            return;
        }

        Record(executor.Name, user, remote, result);
        var stats = executor.GetStatistics();
        await context.Response.WriteAsJsonAsync(
            new ReconfigurationResponse(executor.Name, View(result.Previous), View(result.Current), Workers(stats)),
            AdminJsonContext.Default.ReconfigurationResponse).ConfigureAwait(false);
    }

    private void Record(string name, string user, string remote, BoundedExecutorReconfiguration result)
    {
        var (before, after) = (result.Previous, result.Current);
        if (logger.IsEnabled(LogLevel.Information))
        {
            logger.SettingsChanged(
                name,
                user,
                remote,
                before.WorkerCount,
                after.WorkerCount,
                before.QueueCapacity,
                after.QueueCapacity,
                before.RejectionPolicy,
                after.RejectionPolicy,
                SettingsRequest.FormatTimeout(before.WaitTimeout),
                SettingsRequest.FormatTimeout(after.WaitTimeout));
        }

        if (before.WorkerCount != after.WorkerCount)
        {
            metrics.Changed(name, SettingsRequest.Workers);
        }

        if (before.QueueCapacity != after.QueueCapacity)
        {
            metrics.Changed(name, SettingsRequest.QueueCapacity);
        }

        if (before.RejectionPolicy != after.RejectionPolicy)
        {
            metrics.Changed(name, SettingsRequest.RejectionPolicyField);
        }

        if (before.WaitTimeout != after.WaitTimeout)
        {
            metrics.Changed(name, SettingsRequest.WaitTimeout);
        }
    }

    private Task Refuse(HttpContext context, string name, string user, string remote, string reason, IResult problem)
    {
        metrics.Refused(name, reason);
        logger.SettingsChangeRefused(name, user, remote, problem is IStatusCodeHttpResult { StatusCode: { } status } ? status : 400, reason);
        return problem.ExecuteAsync(context);
    }

    /// <summary>
    /// Reads the whole body, up to <see cref="SettingsRequest.MaxBodyBytes"/>. The caller advances the reader past
    /// the returned buffer. A body that has already arrived is read without yielding.
    /// </summary>
    private static async ValueTask<(ReadOnlySequence<byte> Buffer, bool TooLarge)> ReadBody(PipeReader reader, CancellationToken cancellationToken)
    {
        while (true)
        {
            var read = await reader.ReadAsync(cancellationToken).ConfigureAwait(false);
            if (read.Buffer.Length > SettingsRequest.MaxBodyBytes)
            {
                return (read.Buffer, true);
            }

            if (read.IsCompleted || read.IsCanceled)
            {
                return (read.Buffer, false);
            }

            reader.AdvanceTo(read.Buffer.Start, read.Buffer.End);
        }
    }

    private ExecutorResponse Describe(BoundedExecutor executor, bool history)
    {
        var s = executor.GetStatistics();
        return new ExecutorResponse(
            s.Name,
            s.IsShutdown,
            Workers(s),
            new QueueView(s.QueueLength, s.QueueCapacity, Math.Round(s.OldestQueuedItemAge.TotalMilliseconds, 3)),
            new SettingsView(s.TargetWorkerCount, s.QueueCapacity, s.RejectionPolicy.ToString(), SettingsRequest.FormatTimeout(s.WaitTimeout)),
            new CountersView(s.Submitted, s.Completed, s.Failed, s.Cancelled, s.Rejected, s.Discarded, s.Abandoned, s.CallerRuns, s.CallbackFailures, s.ThreadPoolBlockingWaits),
            sampler.GetRates(s),
            history ? sampler.GetHistory(s.Name) : null);
    }

    private static WorkersView Workers(BoundedExecutorStatistics s) =>
        new(s.TargetWorkerCount, s.LiveWorkerCount, s.BusyWorkerCount, s.PeakWorkerCount, s.MaxWorkerCount);

    private static SettingsView View(BoundedExecutorSettings s) =>
        new(s.WorkerCount, s.QueueCapacity, s.RejectionPolicy.ToString(), SettingsRequest.FormatTimeout(s.WaitTimeout));

    private static ProblemHttpResult NotFound(string name) => TypedResults.Problem(
        $"No executor named '{name}' is registered.",
        statusCode: StatusCodes.Status404NotFound,
        title: "Unknown executor",
        extensions: [new("executor", name)]);

    private static string RouteName(HttpContext context) => context.Request.RouteValues["name"] as string ?? string.Empty;

    private static bool WantsHistory(HttpContext context) =>
        context.Request.Query.TryGetValue("history", out var value) && string.Equals(value, "true", StringComparison.OrdinalIgnoreCase);

    private static string User(HttpContext context) =>
        context.User.Identity is { IsAuthenticated: true } identity ? identity.Name ?? "an authenticated user without a name" : "anonymous";
}
