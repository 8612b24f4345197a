using System.Globalization;
using System.Text.Json;
using BoundedWork.Hosting;

namespace BoundedWork.AspNetCore.Internal;

/// <summary>
/// The <c>fairShare</c> field of a change to a durable queue's fleet-wide settings (<see cref="ClusterSettingsRequest"/>),
/// read as strictly as the rest: <c>null</c> turns fair share off; an object turns it on (from its defaults when it was
/// off) and sets exactly the fields it names: <c>defaultWeight</c>, <c>tenantWeights</c> (tenants and weights; a
/// <c>null</c> weight removes a tenant's own weight), <c>maxRunningPerTenant</c>, <c>startsPerSecondPerTenant</c> and
/// <c>startsBurstPerTenant</c> (<c>null</c> clears each). Each problem
/// is reported under <c>fairShare.{field}</c>. A setting added to <see cref="WorkQueueFairShare"/> takes a constant, a
/// case in <see cref="Read"/>, a line in <see cref="Describe"/> and a member of <see cref="FairShareView"/>.
/// </summary>
internal static class FairShareRequest
{
    public const string DefaultWeight = "defaultWeight";
    public const string TenantWeights = "tenantWeights";
    public const string MaxRunningPerTenant = "maxRunningPerTenant";
    public const string StartsPerSecondPerTenant = "startsPerSecondPerTenant";
    public const string StartsBurstPerTenant = "startsBurstPerTenant";

    /// <summary>The most tenants one change may name in <c>tenantWeights</c>; the stored settings hold up to <see cref="WorkQueueFairShare.MaxWeights"/>.</summary>
    public const int MaxWeightsPerChange = 100;

    /// <summary>The most problems with single tenants an answer lists; the rest are counted.</summary>
    private const int MaxTenantProblems = 10;

    /// <summary>The fields <c>fairShare</c> takes, in the order the documents list them.</summary>
    public static readonly string[] Fields = [DefaultWeight, TenantWeights, MaxRunningPerTenant, StartsPerSecondPerTenant, StartsBurstPerTenant];

    /// <summary>A field's name as errors and the audit name it: <c>fairShare.defaultWeight</c>.</summary>
    public static string PathOf(string field) => ClusterSettingsRequest.FairShare + "." + field;

    /// <summary>
    /// Reads the value of <c>fairShare</c> (the reader is on it) into a change of the fair share in force
    /// (<see langword="null"/>: off), or records why not in <paramref name="errors"/> and returns <see langword="null"/>.
    /// </summary>
    public static Func<WorkQueueFairShare?, WorkQueueFairShare?>? Read(ref Utf8JsonReader reader, FieldErrors errors)
    {
        if (reader.TokenType == JsonTokenType.Null)
        {
            return static _ => null;
        }

        if (reader.TokenType != JsonTokenType.StartObject)
        {
            errors[ClusterSettingsRequest.FairShare] = [$"fairShare must be an object with any of {string.Join(", ", Fields)} (such as {{\"tenantWeights\": {{\"acme\": 4}}}}), or null to turn fair share off; not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        var problems = errors.Count;
        var changes = new List<Func<WorkQueueFairShare, WorkQueueFairShare>>();
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var unknown = 0;
        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            if (!JsonChangeReader.TryGetText(ref reader, out var name))
            {
                errors[ClusterSettingsRequest.FairShare] = ["A field name in fairShare is not valid UTF-8 text."];
                reader.Read();
                reader.Skip();
                continue;
            }

            reader.Read();
            var field = Array.Find(Fields, f => string.Equals(f, name, StringComparison.OrdinalIgnoreCase));
            if (field is null)
            {
                var shown = PathOf(SettingsRequest.Shorten(name));
                errors[shown] = [unknown++ == 0 ? $"Unknown field '{shown}'; fairShare takes {string.Join(", ", Fields)}." : $"Unknown field '{shown}'."];
                reader.Skip();
                continue;
            }

            if (!seen.Add(field))
            {
                errors[PathOf(field)] = [$"{PathOf(field)} appears more than once."];
                reader.Skip();
                continue;
            }

            switch (field)
            {
                case DefaultWeight when ReadWeight(ref reader, PathOf(DefaultWeight), errors) is { } weight:
                    changes.Add(f => f with { DefaultWeight = weight });
                    break;
                case TenantWeights when ReadTenantWeights(ref reader, errors) is { } weights:
                    changes.Add(f => WithWeights(f, weights));
                    break;
                case MaxRunningPerTenant when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static f => f with { MaxRunningPerTenant = null });
                    break;
                case MaxRunningPerTenant when ClusterSettingsRequest.ReadInt32(ref reader, PathOf(MaxRunningPerTenant), 1, ClusterSettingsRequest.MaxLimit, errors) is { } max:
                    changes.Add(f => f with { MaxRunningPerTenant = max });
                    break;
                case StartsPerSecondPerTenant when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static f => f with { StartsPerSecondPerTenant = null });
                    break;
                case StartsPerSecondPerTenant when ClusterSettingsRequest.ReadRate(ref reader, PathOf(StartsPerSecondPerTenant), errors) is { } rate:
                    changes.Add(f => f with { StartsPerSecondPerTenant = rate });
                    break;
                case StartsBurstPerTenant when reader.TokenType == JsonTokenType.Null:
                    changes.Add(static f => f with { StartsBurstPerTenant = null });
                    break;
                case StartsBurstPerTenant when ClusterSettingsRequest.ReadInt32(ref reader, PathOf(StartsBurstPerTenant), 1, ClusterSettingsRequest.MaxLimit, errors) is { } burst:
                    changes.Add(f => f with { StartsBurstPerTenant = burst });
                    break;
            }
        }

        if (errors.Count > problems)
        {
            return null;
        }

        return fair => changes.Aggregate(fair ?? new WorkQueueFairShare(), static (f, change) => change(f));
    }

    /// <summary>
    /// The JSON field a storage's validation message about fair share concerns (<c>FairShare.Weights['acme'] must
    /// ...</c> is <c>fairShare.tenantWeights</c>); <see langword="null"/> when the message is not about fair share.
    /// </summary>
    public static string? FieldOf(string message)
    {
        if (!message.StartsWith("FairShare", StringComparison.Ordinal))
        {
            return null;
        }

        return message.StartsWith("FairShare.DefaultWeight", StringComparison.Ordinal) ? PathOf(DefaultWeight)
            : message.StartsWith("FairShare.Weights", StringComparison.Ordinal) ? PathOf(TenantWeights)
            : message.StartsWith("FairShare.MaxRunningPerTenant", StringComparison.Ordinal) ? PathOf(MaxRunningPerTenant)
            : message.StartsWith("FairShare.StartsPerSecondPerTenant", StringComparison.Ordinal) ? PathOf(StartsPerSecondPerTenant)
            : message.StartsWith("FairShare.StartsBurstPerTenant", StringComparison.Ordinal) ? PathOf(StartsBurstPerTenant)
            : ClusterSettingsRequest.FairShare;
    }

    /// <summary>
    /// Describes a change of the fair share for the audit log: each changed setting with its value before and after,
    /// each tenant whose weight changed (its name escaped), <c>off -&gt; on</c> and <c>on -&gt; off</c>; <c>unchanged</c> when
    /// nothing did. Turning fair share off is one entry, not one per weight dropped.
    /// </summary>
    public static string Describe(WorkQueueFairShare? before, WorkQueueFairShare? after)
    {
        if (after is null)
        {
            return before is null ? "unchanged (off)" : "on -> off";
        }

        var changes = new List<string>();
        if (before is null)
        {
            changes.Add("off -> on");
        }

        var was = before ?? new WorkQueueFairShare();
        void Compare<TValue>(string name, TValue previous, TValue current)
        {
            if (!EqualityComparer<TValue>.Default.Equals(previous, current))
            {
                changes.Add($"{name} {Format(previous)} -> {Format(current)}");
            }
        }

        Compare(DefaultWeight, was.DefaultWeight, after.DefaultWeight);
        Compare(MaxRunningPerTenant, was.MaxRunningPerTenant, after.MaxRunningPerTenant);
        Compare(StartsPerSecondPerTenant, was.StartsPerSecondPerTenant, after.StartsPerSecondPerTenant);
        Compare(StartsBurstPerTenant, was.StartsBurstPerTenant, after.StartsBurstPerTenant);
        foreach (var tenant in was.Weights.Keys.Union(after.Weights.Keys, StringComparer.Ordinal).Order(StringComparer.Ordinal))
        {
            Compare($"{TenantWeights}['{AdminLog.Escape(tenant)}']", was.Weights.TryGetValue(tenant, out var old) ? old : (int?)null, after.Weights.TryGetValue(tenant, out var now) ? now : (int?)null);
        }

        return changes.Count == 0 ? "unchanged" : string.Join(", ", changes);
    }

    /// <summary>The fair share as the documents show it; <see langword="null"/> while it is off.</summary>
    public static FairShareView? View(WorkQueueFairShare? fair) => fair is null
        ? null
        : new FairShareView(fair.DefaultWeight, new SortedDictionary<string, int>(fair.Weights.ToDictionary(), StringComparer.Ordinal), fair.MaxRunningPerTenant, fair.StartsPerSecondPerTenant, fair.StartsBurstPerTenant);

    private static string Format<TValue>(TValue value) => value is null ? "none" : Convert.ToString(value, CultureInfo.InvariantCulture) ?? "none";

    private static WorkQueueFairShare WithWeights(WorkQueueFairShare fair, Dictionary<string, int?> weights)
    {
        var merged = new Dictionary<string, int>(fair.Weights, StringComparer.Ordinal);
        foreach (var (tenant, weight) in weights)
        {
            if (weight is { } w)
            {
                merged[tenant] = w;
            }
            else
            {
                merged.Remove(tenant);
            }
        }

        return fair with { Weights = new System.Collections.ObjectModel.ReadOnlyDictionary<string, int>(merged) };
    }

    /// <summary>A weight: a whole number from 1 to <see cref="WorkQueueFairShare.MaxWeight"/>; the message names <paramref name="field"/>.</summary>
    private static int? ReadWeight(ref Utf8JsonReader reader, string field, FieldErrors errors)
    {
        if (WeightError(ref reader, field) is { } error)
        {
            errors[field] = [error + (field == PathOf(DefaultWeight) && reader.TokenType == JsonTokenType.Null ? " It cannot be cleared: 1 is its default." : string.Empty)];
            return null;
        }

        reader.TryGetInt32(out var weight);
        return weight;
    }

    /// <summary>Why the value under the reader is not a weight (skipping it), or <see langword="null"/> when it is one.</summary>
    private static string? WeightError(ref Utf8JsonReader reader, string what)
    {
        var range = $"a whole number from 1 to {WorkQueueFairShare.MaxWeight.ToString(CultureInfo.InvariantCulture)}";
        if (reader.TokenType != JsonTokenType.Number)
        {
            var token = JsonChangeReader.Describe(reader.TokenType);
            reader.Skip();
            return $"{what} must be {range}, not {token}.";
        }

        return reader.TryGetInt32(out var weight) && weight is >= 1 and <= WorkQueueFairShare.MaxWeight
            ? null
            : $"{what} must be {range} (was {SettingsRequest.Shorten(JsonChangeReader.RawText(ref reader))}).";
    }

    /// <summary>
    /// Reads <c>tenantWeights</c>: an object of 1 to <see cref="MaxWeightsPerChange"/> tenants (each a valid tenant name,
    /// named once) and their weights, <c>null</c> removing a tenant's own weight. Every bad entry is reported, shortened.
    /// </summary>
    private static Dictionary<string, int?>? ReadTenantWeights(ref Utf8JsonReader reader, FieldErrors errors)
    {
        var field = PathOf(TenantWeights);
        if (reader.TokenType != JsonTokenType.StartObject)
        {
            errors[field] = [$"{field} must be an object of tenants and weights, such as {{\"acme\": 4, \"old\": null}} (null removes a tenant's own weight), not {JsonChangeReader.Describe(reader.TokenType)}."];
            reader.Skip();
            return null;
        }

        var weights = new Dictionary<string, int?>(StringComparer.Ordinal);
        var problems = new List<string>();
        var entries = 0;
        void Problem(string text)
        {
            if (problems.Count < MaxTenantProblems)
            {
                problems.Add(text);
            }
        }

        while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
        {
            entries++;
            if (!JsonChangeReader.TryGetText(ref reader, out var tenant))
            {
                Problem($"{field}: a tenant's name is not valid UTF-8 text.");
                reader.Read();
                reader.Skip();
                continue;
            }

            reader.Read();
            var shown = $"\"{JsonEncodedText.Encode(SettingsRequest.Shorten(tenant))}\""; // quoted and escaped: a name may hold anything
            if (FairShareSettings.GetTenantError(tenant) is { } nameError)
            {
                Problem($"{field} {shown}: {nameError}");
                reader.Skip();
            }
            else if (weights.ContainsKey(tenant))
            {
                Problem($"{field} {shown} appears more than once.");
                reader.Skip();
            }
            else if (reader.TokenType == JsonTokenType.Null)
            {
                weights[tenant] = null;
            }
            else if (WeightError(ref reader, $"{field} {shown}") is { } weightError)
            {
                Problem(weightError + " (null removes the tenant's own weight)");
            }
            else
            {
                reader.TryGetInt32(out var weight);
                weights[tenant] = weight;
            }
        }

        if (entries > MaxWeightsPerChange)
        {
            problems.Insert(0, $"{field} names {entries.ToString(CultureInfo.InvariantCulture)} tenants; one change sets at most {MaxWeightsPerChange} (send several changes).");
        }
        else if (entries == 0)
        {
            problems.Add($"{field} must name at least one tenant, such as {{\"acme\": 4}}.");
        }

        if (problems.Count > 0)
        {
            var listed = problems.Count;
            errors[field] = listed == MaxTenantProblems ? [.. problems, "And possibly more problems, not listed."] : [.. problems];
            return null;
        }

        return weights;
    }
}
