using System.Globalization;
using System.Text.Json;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace BoundedWork.Cli.Rendering;

/// <summary>How the admin API's documents look on a terminal. Colour marks danger; the words say it too.</summary>
internal static class Views
{
    /// <summary>
    /// An executor's health in one word: <c>rejecting</c> (refusing or discarding items now), <c>full</c> (queue at
    /// capacity), <c>near capacity</c> (80% or more), <c>slow</c> (a worker runs an item past the slow-item threshold),
    /// <c>shut down</c>, <c>paused</c> (yellow: an operator paused it; its workers start no new item); for a durable queue, <c>storage unreachable</c> (red) and <c>backlog</c> (yellow: items ready in
    /// the storage while every worker is busy); else <c>ok</c>.
    /// </summary>
    public static (string Word, string Colour) Health(JsonElement executor)
    {
        var length = executor.Long("queue", "length");
        var capacity = executor.Long("queue", "capacity");
        var storage = executor.Get("storage");
        var stored = storage.ValueKind == JsonValueKind.Object;
        return executor switch
        {
            _ when executor.Flag("isShutdown") => ("shut down", "grey"),
            _ when executor.Flag("pause", "paused") => ("paused", "yellow"),
            _ when stored && !storage.Flag("available") => ("storage unreachable", "red"),
            _ when (executor.Number("rates", "rejected") ?? 0) + (executor.Number("rates", "discarded") ?? 0) > 0 => ("rejecting", "red"),
            _ when capacity > 0 && length >= capacity => ("full", "red"),
            _ when capacity > 0 && length >= capacity * 0.8 => ("near capacity", "yellow"),
            _ when executor.Long("workers", "slow") > 0 => ("slow", "yellow"),
            _ when stored && storage.Long("ready") > 0 && executor.Long("workers", "busy") >= executor.Long("workers", "live") => ("backlog", "yellow"),
            _ => ("ok", "green"),
        };
    }

    /// <summary>
    /// A durable queue's stored backlog as this node last read it (every node's items): ready with the oldest's age,
    /// retrying, dead; or why the storage cannot be read. Empty for a queue without storage.
    /// </summary>
    public static string Stored(JsonElement executor)
    {
        var storage = executor.Get("storage");
        if (storage.ValueKind != JsonValueKind.Object)
        {
            return string.Empty;
        }

        if (!storage.Flag("available"))
        {
            return $"{storage.Text("kind")} unreachable: {(storage.Text("lastError") is { Length: > 0 } error ? error : "not read yet")}";
        }

        var ready = storage.Long("ready");
        var parts = new List<string> { ready > 0 ? $"{ready} ready (oldest {Doc.Duration(storage.Number("oldestReadyAgeMs"))})" : "0 ready" };
        if (storage.Long("scheduled") > 0)
        {
            parts.Add($"{storage.Long("scheduled")} retrying");
        }

        parts.Add($"{storage.Long("deadLettered")} dead");
        return string.Join(", ", parts);
    }

    public static Table Executors(JsonElement list, bool withHistory)
    {
        var table = new Table().Border(TableBorder.Simple);
        table.AddColumn(new TableColumn("EXECUTOR").NoWrap());
        foreach (var column in withHistory ? (string[])["BUSY", "LIVE", "TARGET", "QUEUE"] : ["BUSY", "LIVE", "TARGET", "MAX", "QUEUE"])
        {
            table.AddColumn(new TableColumn(column).RightAligned().NoWrap());
        }

        if (withHistory)
        {
            table.AddColumn(new TableColumn("LAST 20 s").NoWrap());
        }

        table.AddColumn(new TableColumn("OLDEST").RightAligned());
        var anyStored = list.Items("executors").Any(e => e.Get("storage").ValueKind == JsonValueKind.Object);
        if (anyStored)
        {
            table.AddColumn(new TableColumn("STORED").NoWrap());
        }

        if (!withHistory)
        {
            table.AddColumn("POLICY");
        }

        table.AddColumn(new TableColumn("DONE/s").RightAligned());
        table.AddColumn(new TableColumn("REFUSED/s").RightAligned());
        if (!withHistory)
        {
            table.AddColumn(new TableColumn("FAILED").RightAligned());
        }

        table.AddColumn(new TableColumn("HEALTH").NoWrap());
        foreach (var e in list.Items("executors"))
        {
            var (word, colour) = Health(e);
            var queue = $"{e.Long("queue", "length")}/{e.Long("queue", "capacity")}";
            var cells = new List<IRenderable>
            {
                new Text(e.Text("name"), new Style(decoration: Decoration.Bold)),
                new Text(e.Long("workers", "busy").ToString(CultureInfo.InvariantCulture)),
                new Text(e.Long("workers", "live").ToString(CultureInfo.InvariantCulture)),
                new Text(e.Long("workers", "target").ToString(CultureInfo.InvariantCulture)),
                new Markup(colour == "green" || colour == "grey" ? Markup.Escape(queue) : $"[{colour}]{Markup.Escape(queue)}[/]"),
            };
            if (!withHistory)
            {
                cells.Insert(4, new Text(e.Long("workers", "max").ToString(CultureInfo.InvariantCulture)));
            }

            if (withHistory)
            {
                var history = e.Items("history", "queueLength").Select(v => v.GetDouble()).ToList();
                cells.Add(new Markup($"[{colour}]{Markup.Escape(Sparkline.Of(history, 20, e.Long("queue", "capacity")))}[/]"));
            }

            var refused = (e.Number("rates", "rejected") ?? 0) + (e.Number("rates", "discarded") ?? 0);
            cells.Add(new Text(Doc.Duration(e.Number("queue", "oldestItemAgeMs"))));
            if (anyStored)
            {
                var stored = Stored(e);
                cells.Add(new Text(stored.Length == 0 ? "-" : stored));
            }

            if (!withHistory)
            {
                cells.Add(new Text(e.Text("settings", "rejectionPolicy")));
            }

            cells.Add(new Text(Doc.Rate(e.Number("rates", "completed"))));
            cells.Add(refused > 0 ? new Markup($"[red]{Doc.Rate(refused)}[/]") : new Text(Doc.Rate(e.Number("rates", "rejected") is null ? null : 0)));
            if (!withHistory)
            {
                cells.Add(new Text(e.Long("counters", "failed").ToString(CultureInfo.InvariantCulture)));
            }

            cells.Add(new Markup($"[{colour}]{Markup.Escape(word)}[/]"));
            table.AddRow(cells);
        }

        return table;
    }

    /// <summary>The most characters of a tenant's name <c>bw show</c> prints.</summary>
    public const int MaxTenantShown = 40;

    public static IRenderable Executor(JsonElement e)
    {
        var (word, colour) = Health(e);
        var grid = new Grid().AddColumn(new GridColumn().NoWrap()).AddColumn();
        void Row(string name, string value) => grid.AddRow(new Markup($"[grey]{name}[/]"), new Markup(value));
        Row("health", $"[{colour}]{Markup.Escape(word)}[/]");
        if (e.Flag("pause", "paused"))
        {
            var until = e.Text("pause", "until") is { Length: > 0 } end ? $"until {end}" : "until resumed ('bw resume')";
            Row("paused", "[yellow]" + Markup.Escape($"{e.Text("pause", "reason")}; since {e.Text("pause", "since")}, {until}") + "[/]");
        }

        Row("workers", $"busy {e.Long("workers", "busy")}, live {e.Long("workers", "live")}, target {e.Long("workers", "target")}, max {e.Long("workers", "max")}, slow {e.Long("workers", "slow")}, peak {e.Long("workers", "peak")}");
        Row("queue", $"{e.Long("queue", "length")} of {e.Long("queue", "capacity")}, oldest waited {Doc.Duration(e.Number("queue", "oldestItemAgeMs"))}, producers waiting {e.Long("queue", "waitingProducers")}");
        if (Stored(e) is { Length: > 0 } stored)
        {
            Row("stored", Markup.Escape(stored) + " [grey](in the storage, every node's; the queue above is this node's executor)[/]");
            var firstStored = true;
            foreach (var tenant in e.Items("storage", "tenants"))
            {
                // As the executor's tenants below: the application's callers' text, shown safe and cut short.
                Row(firstStored ? "busiest tenants (stored)" : string.Empty, Markup.Escape($"{TenantName(tenant)}: ready {tenant.Long("ready")}, running {tenant.Long("running")}; on this node completed {tenant.Long("completed")}, failed {tenant.Long("failed")}, dead {tenant.Long("deadLettered")}"));
                firstStored = false;
            }
        }
        Row("settings", Markup.Escape($"policy {e.Text("settings", "rejectionPolicy")}, waitTimeout {e.Text("settings", "waitTimeout")}, slowItemThreshold {e.Text("settings", "slowItemThreshold")}, queueWaitThreshold {e.Text("settings", "queueWaitThreshold")}"));
        if (e.Text("rateLimit", "kind") is { Length: > 0 } kind && kind != "none")
        {
            var limit = kind == "custom" ? e.Text("rateLimit", "limiter") : $"{e.Long("rateLimit", "permitsPerSecond")}/s, burst {e.Long("rateLimit", "permitBurst")}";
            var waiting = e.Long("rateLimit", "waitingWorkers");
            Row("rate limit", (waiting > 0 ? "[yellow]" : "[default]") + Markup.Escape($"{limit}, workers waiting for a permit {waiting}, permits {e.Long("rateLimit", "permitsAcquired")}, refused {e.Long("rateLimit", "permitsRefused")}, waited {Doc.Duration(e.Number("rateLimit", "waitTimeMs"))}") + "[/]");
        }

        Row("per second", $"submitted {Doc.Rate(e.Number("rates", "submitted"))}, completed {Doc.Rate(e.Number("rates", "completed"))}, failed {Doc.Rate(e.Number("rates", "failed"))}, rejected {Doc.Rate(e.Number("rates", "rejected"))}, discarded {Doc.Rate(e.Number("rates", "discarded"))}");
        var counters = e.Get("counters");
        if (counters.ValueKind == JsonValueKind.Object)
        {
            Row("counters", Markup.Escape(string.Join(", ", counters.EnumerateObject().Select(p => $"{p.Name} {p.Value.GetRawText()}"))));
        }

        var adaptive = e.Get("adaptive");
        if (adaptive.ValueKind == JsonValueKind.Object)
        {
            var pin = !adaptive.Flag("pinned") ? "not pinned"
                : adaptive.Text("pinnedUntil") is { Length: > 0 } until ? $"pinned until {until}" : "pinned until unpinned";
            Row("adaptive", Markup.Escape($"{adaptive.Text("mode")}, {adaptive.Long("minWorkers")} to {adaptive.Long("maxWorkers")} workers, {pin}, run-time baseline {Doc.Duration(adaptive.Number("runTimeBaselineMs"))}, {adaptive.Long("decisionCount")} decisions"));
            foreach (var decision in adaptive.Items("decisions").Reverse().Take(5))
            {
                Row(string.Empty, Markup.Escape($"{decision.Text("time")}  {decision.Text("description")}"));
            }
        }

        if (e.Items("tenants").Any())
        {
            // Tenant names come from the application's callers: shown as text (control characters as escapes), cut short.
            var first = true;
            foreach (var tenant in e.Items("tenants"))
            {
                var name = TenantName(tenant);
                Row(first ? "busiest tenants" : string.Empty, Markup.Escape(
                    $"{name}: weight {tenant.Long("weight")}, queued {tenant.Long("queued")}, running {tenant.Long("running")}, completed {tenant.Long("completed")}, failed {tenant.Long("failed")}, refused {tenant.Long("refused")}, wait {Doc.Duration(tenant.Number("averageWaitMs"))}"));
                first = false;
            }
        }

        var running = new Table().Border(TableBorder.Simple).Title("running now, longest first");
        running.AddColumn("WORKER");
        running.AddColumn(new TableColumn("ELAPSED").RightAligned());
        running.AddColumn("METHOD");
        foreach (var item in e.Items("running"))
        {
            running.AddRow(Markup.Escape(item.Text("worker")), Doc.Duration(item.Number("elapsedMs")), Markup.Escape(item.Text("method")));
        }

        IRenderable items = e.Items("running").Any() ? running : new Markup("[grey]No item is running now.[/]");
        return new Rows(new Markup($"[bold]{Markup.Escape(e.Text("name"))}[/]"), grid, items);
    }

    /// <summary>A tenant's name as <c>bw show</c> prints it: control characters as escapes, at most <see cref="MaxTenantShown"/> characters.</summary>
    private static string TenantName(JsonElement tenant)
    {
        var name = Commands.ClusterCommands.Safe(tenant.Text("tenant"));
        return name.Length > MaxTenantShown ? name[..(MaxTenantShown - 1)] + "…" : name;
    }

    public static IRenderable ThreadPool(JsonElement pool, bool withHistory)
    {
        var starved = pool.Flag("isStarved");
        var grid = new Grid().AddColumn(new GridColumn().NoWrap()).AddColumn();
        void Row(string name, string value) => grid.AddRow(new Markup($"[grey]{name}[/]"), new Markup(value));
        Row("state", starved
            ? $"[red bold]STARVED[/] [red]{Markup.Escape(pool.Text("starvation"))}[/]"
            : "[green]not starved[/]");
        Row("probe latency", $"{Doc.Duration(pool.Number("queueLatencyMs"))} [grey](a trivial work item's wait for a pool thread; starved from {Doc.Duration(pool.Number("starvationThresholdMs"))})[/]");
        Row("threads", $"{pool.Long("threadCount")} [grey](min {pool.Long("minThreads")}, max {pool.Long("maxThreads")})[/]");
        Row("pending items", (pool.Long("pendingWorkItemCount") > 0 ? "[yellow]" : "[default]") + $"{pool.Long("pendingWorkItemCount")}[/]");
        Row("completed/s", Doc.Rate(pool.Number("completedPerSecond")));
        if (withHistory)
        {
            var pending = pool.Items("history", "pendingWorkItemCount").Select(v => v.GetDouble()).ToList();
            Row("pending, last 60 s", $"[{(starved ? "red" : "blue")}]{Markup.Escape(Sparkline.Of(pending, 60, Math.Max(pending.DefaultIfEmpty(0).Max(), 10)))}[/]");
        }

        // The app's starvation sentinel (BoundedWork.Diagnostics): its last diagnosis, or why it cannot make one.
        if (pool.Get("lastDiagnosis").ValueKind == JsonValueKind.Object)
        {
            var diagnosed = pool.Flag("lastDiagnosis", "isStarved");
            Row("last diagnosis", $"[{(diagnosed ? "red" : "green")}]{Markup.Escape(pool.Text("lastDiagnosis", "verdict"))}[/] [grey]({Markup.Escape(pool.Text("lastDiagnosis", "diagnosedAt"))})[/]");
            foreach (var site in pool.Items("lastDiagnosis", "blockingSites"))
            {
                Row("  blocked", Markup.Escape(site.GetString() ?? ""));
            }

            foreach (var line in pool.Items("lastDiagnosis", "advice"))
            {
                Row("  what to do", Markup.Escape(line.GetString() ?? ""));
            }
        }
        else if (pool.Get("diagnosisLimitation").ValueKind == JsonValueKind.String)
        {
            Row("sentinel", $"[yellow]can detect starvation, not diagnose it: {Markup.Escape(pool.Text("diagnosisLimitation"))}[/]");
        }

        return new Panel(grid).Header("shared ThreadPool").Border(BoxBorder.Rounded).BorderColor(starved ? Color.Red : Color.Grey);
    }
}
